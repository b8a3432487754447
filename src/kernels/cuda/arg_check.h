// Host-side argument checks for the .cu kernels, which cannot include fmt or
// base/error.h: a failed check throws parallm::Error naming the kernel, the
// condition that failed and the offending value, like PX_CHECK does.
#pragma once
#include <cstdint>

namespace parallm::cuda {

void fail_arg(const char* kernel, const char* what, int64_t value);

inline void require_arg(bool ok, const char* kernel, const char* what, int64_t value) {
  if (!ok) fail_arg(kernel, what, value);
}

}  // namespace parallm::cuda
