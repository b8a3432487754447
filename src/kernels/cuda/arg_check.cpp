// Argument-check failures of the .cu kernels (arg_check.h).
#include "kernels/cuda/arg_check.h"

#include "base/error.h"

namespace parallm::cuda {

void fail_arg(const char* kernel, const char* what, int64_t value) {
  PX_FAIL("{}: bad argument, need {} (got {})", kernel, what, value);
}

}  // namespace parallm::cuda
