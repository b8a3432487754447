// Error checks for CUDA runtime calls (cuda_check.h).
#include "kernels/cuda/cuda_check.h"

#include "base/error.h"

namespace parallm::cuda {

void fail_call(const char* api, int code, const char* what, const char* call, const char* file,
               int line) {
  PX_FAIL("{} error {} ({}) in {} at {}:{}", api, code, what, call, file, line);
}

void check_runtime(cudaError_t e, const char* call, const char* file, int line) {
  if (e != cudaSuccess)
    fail_call("CUDA", static_cast<int>(e), cudaGetErrorString(e), call, file, line);
}

void check_launch(const char* kernel, const char* file, int line) {
  check_runtime(cudaGetLastError(), kernel, file, line);
}

}  // namespace parallm::cuda
