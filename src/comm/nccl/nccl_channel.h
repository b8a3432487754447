// NcclChannel: the device side of one NCCL communicator, shared by the
// NcclCommunicator and the Works it hands out (a Work may outlive it): the
// ncclComm_t, its own communication stream, the caller's compute stream that
// every operation first waits on, the send/recv calls deferred into the next
// NCCL group, and abort. Point-to-point is deferred because NCCL's send and
// recv each block the GPU until matched: a recv_async then send_async ring
// would deadlock if each were launched alone, so they are launched together
// at the first wait, test, collective or blocking call. Invariant: once
// aborted, nothing more is enqueued and every wait throws saying why.
#pragma once
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <memory>
#include <string>
#include <vector>

namespace parallm::comm {

// Completion of enqueued work: an event on the communication stream, or, for
// deferred send/recv not yet launched, no event yet.
class NcclDone {
 public:
  NcclDone() = default;
  ~NcclDone();
  NcclDone(const NcclDone&) = delete;
  NcclDone& operator=(const NcclDone&) = delete;
  bool launched() const { return event_ != nullptr; }
  cudaEvent_t event() const { return event_; }
  // Records the event on `stream` (once).
  void record(cudaStream_t stream);

 private:
  cudaEvent_t event_ = nullptr;
};

// One deferred ncclSend or ncclRecv, in bytes.
struct P2pCall {
  bool is_send = true;
  const void* send = nullptr;
  void* recv = nullptr;
  size_t bytes = 0;
  int peer = 0;
};

class NcclChannel {
 public:
  // Takes ownership of comm (destroyed with the channel, unless aborted).
  NcclChannel(ncclComm_t comm, int device, std::string label);
  ~NcclChannel();
  NcclChannel(const NcclChannel&) = delete;
  NcclChannel& operator=(const NcclChannel&) = delete;

  ncclComm_t comm() const { return comm_; }
  int device() const { return device_; }
  cudaStream_t stream() const { return stream_; }
  const std::string& label() const { return label_; }  // "group 'tp[1]' (rank 1 of 2)"
  cudaStream_t compute_stream() const { return compute_; }
  void set_compute_stream(cudaStream_t s) { compute_ = s; }
  // A 4-byte device buffer for barriers.
  void* barrier_buffer() const { return barrier_buf_; }

  // Before enqueuing an operation: throws if aborted, launches deferred
  // send/recv (keeping issue order), makes the device current and the
  // communication stream wait for what is queued on the compute stream.
  void begin(const std::string& what);
  // Completion of everything enqueued so far.
  std::shared_ptr<NcclDone> record_done();

  // Adds a send/recv to the next group; its completion is that group's.
  std::shared_ptr<NcclDone> defer(const P2pCall& call, const std::string& what);
  // Launches the deferred send/recv as one NCCL group (no-op when none).
  void flush();

  // Throws when the channel was aborted or NCCL reports an asynchronous
  // error (then it aborts the communicator first).
  void check_async(const std::string& what);
  // ncclCommAbort: ends every NCCL kernel of the communicator. Later calls throw `why`.
  void abort(const std::string& why) noexcept;
  bool aborted() const { return aborted_; }

 private:
  void enter(const std::string& what);  // checks abort, sets device, waits on compute
  ncclComm_t comm_;
  int device_;
  std::string label_;
  cudaStream_t stream_ = nullptr;
  cudaStream_t compute_ = nullptr;  // the legacy default stream until set
  cudaEvent_t compute_ready_ = nullptr;
  void* barrier_buf_ = nullptr;
  std::vector<P2pCall> deferred_;
  std::shared_ptr<NcclDone> deferred_done_;
  std::string deferred_what_;  // the first deferred call, for messages
  bool aborted_ = false;
  std::string abort_reason_;
};

}  // namespace parallm::comm
