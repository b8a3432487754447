// Completion and timeout of NCCL operations (nccl_work.h).
#include "comm/nccl/nccl_work.h"

#include <thread>

#include "base/error.h"
#include "kernels/cuda/cuda_check.h"

namespace parallm::comm {

bool NcclWork::poll() {
  if (!done_->launched()) ch_->flush();  // a deferred send/recv: launch its group now
  const std::string what = label_.str();
  ch_->check_async(what);
  PX_CHECK(done_->launched(), "{}: its send/recv group was never launched", what);
  const cudaError_t e = cudaEventQuery(done_->event());
  if (e == cudaSuccess) return true;
  if (e == cudaErrorNotReady) return false;
  PX_CUDA(e);  // throws naming the error
  return false;
}

bool NcclWork::wait_until(std::chrono::steady_clock::time_point deadline) {
  // Spin briefly (short collectives finish in microseconds), then sleep so
  // that a long wait does not take a core from the host side.
  for (int i = 0;; ++i) {
    if (poll()) return true;
    if (std::chrono::steady_clock::now() >= deadline) {
      ch_->abort(fmt::format("{} did not complete before its deadline", label_.str()));
      return false;
    }
    if (i < 200)
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

}  // namespace parallm::comm
