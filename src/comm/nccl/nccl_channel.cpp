// The shared device-side state of an NCCL communicator (nccl_channel.h).
#include "comm/nccl/nccl_channel.h"

#include "base/error.h"
#include "comm/nccl/nccl_check.h"
#include "kernels/cuda/cuda_check.h"

namespace parallm::comm {

NcclDone::~NcclDone() {
  if (event_ != nullptr) cudaEventDestroy(event_);
}

void NcclDone::record(cudaStream_t stream) {
  if (event_ != nullptr) return;
  PX_CUDA(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming));
  PX_CUDA(cudaEventRecord(event_, stream));
}

NcclChannel::NcclChannel(ncclComm_t comm, int device, std::string label)
    : comm_(comm), device_(device), label_(std::move(label)) {
  PX_CUDA(cudaSetDevice(device_));
  PX_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  PX_CUDA(cudaEventCreateWithFlags(&compute_ready_, cudaEventDisableTiming));
  PX_CUDA(cudaMalloc(&barrier_buf_, sizeof(int32_t)));
  PX_CUDA(cudaMemset(barrier_buf_, 0, sizeof(int32_t)));
}

NcclChannel::~NcclChannel() {
  // Nothing here may throw. A channel is destroyed only after its last Work
  // completed, so no deferred call is left and the stream holds no NCCL work.
  cudaSetDevice(device_);
  if (!aborted_) {
    cudaStreamSynchronize(stream_);
    ncclCommDestroy(comm_);  // finalizes first
  }
  cudaFree(barrier_buf_);
  cudaEventDestroy(compute_ready_);
  cudaStreamDestroy(stream_);
}

void NcclChannel::enter(const std::string& what) {
  PX_CHECK(!aborted_, "{}: the NCCL communicator of {} was aborted earlier ({})", what, label_,
           abort_reason_);
  PX_CUDA(cudaSetDevice(device_));
  PX_CUDA(cudaEventRecord(compute_ready_, compute_));
  PX_CUDA(cudaStreamWaitEvent(stream_, compute_ready_, 0));
}

void NcclChannel::begin(const std::string& what) {
  flush();
  enter(what);
}

std::shared_ptr<NcclDone> NcclChannel::record_done() {
  auto done = std::make_shared<NcclDone>();
  done->record(stream_);
  return done;
}

std::shared_ptr<NcclDone> NcclChannel::defer(const P2pCall& call, const std::string& what) {
  PX_CHECK(!aborted_, "{}: the NCCL communicator of {} was aborted earlier ({})", what, label_,
           abort_reason_);
  if (deferred_done_ == nullptr) {
    deferred_done_ = std::make_shared<NcclDone>();
    deferred_what_ = what;
  }
  deferred_.push_back(call);
  return deferred_done_;
}

void NcclChannel::flush() {
  if (deferred_done_ == nullptr) return;
  std::vector<P2pCall> calls = std::move(deferred_);
  std::shared_ptr<NcclDone> done = std::move(deferred_done_);
  const std::string what =
      deferred_what_ + (calls.size() > 1 ? " and the sends/recvs after it" : "");
  deferred_.clear();
  deferred_done_.reset();
  enter(what);
  nccl_check(ncclGroupStart(), "ncclGroupStart", comm_, what);
  ncclResult_t first = ncclSuccess;
  const char* failed = nullptr;
  for (const P2pCall& c : calls) {
    if (c.bytes == 0) continue;  // both sides agree on the count: nothing moves
    const ncclResult_t r = c.is_send ? ncclSend(c.send, c.bytes, ncclInt8, c.peer, comm_, stream_)
                                     : ncclRecv(c.recv, c.bytes, ncclInt8, c.peer, comm_, stream_);
    if (r != ncclSuccess && first == ncclSuccess) {
      first = r;
      failed = c.is_send ? "ncclSend" : "ncclRecv";
    }
  }
  const ncclResult_t end = ncclGroupEnd();  // always closes the group
  if (first != ncclSuccess) nccl_check(first, failed, comm_, what);
  nccl_check(end, "ncclGroupEnd", comm_, what);
  done->record(stream_);
}

void NcclChannel::check_async(const std::string& what) {
  PX_CHECK(!aborted_, "{}: the NCCL communicator of {} was aborted ({})", what, label_,
           abort_reason_);
  ncclResult_t async = ncclSuccess;
  nccl_check(ncclCommGetAsyncError(comm_, &async), "ncclCommGetAsyncError", comm_, what);
  if (async == ncclSuccess || async == ncclInProgress) return;
  const char* last = ncclGetLastError(comm_);
  const std::string why = fmt::format("NCCL error {} ({}): {}", static_cast<int>(async),
                                      ncclGetErrorString(async), last != nullptr ? last : "");
  abort(why);
  PX_FAIL("{} failed: {}; the communicator was aborted", what, why);
}

void NcclChannel::abort(const std::string& why) noexcept {
  if (aborted_) return;
  aborted_ = true;
  abort_reason_ = why;
  cudaSetDevice(device_);
  ncclCommAbort(comm_);
}

}  // namespace parallm::comm
