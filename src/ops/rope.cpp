#include "ops/rope.h"

#include "kernels/cpu/rope.h"
#include "ops/device_backend.h"

namespace parallm::ops {

void rope_forward(const Stream& s, float* x, const int64_t* positions, int64_t B, int64_t T,
                  int64_t H, int64_t D, const double* inv_freq) {
  if (const DeviceBackend* b = s.backend())
    return b->rope(x, positions, B, T, H, D, inv_freq, 0.0, false);
  require_cpu_kernels(s, "rope_forward");
  cpu::rope_forward(s.operand(x), s.operand(positions), B, T, H, D, s.operand(inv_freq));
}

void rope_backward(const Stream& s, float* dx, const int64_t* positions, int64_t B, int64_t T,
                   int64_t H, int64_t D, const double* inv_freq) {
  if (const DeviceBackend* b = s.backend())
    return b->rope(dx, positions, B, T, H, D, inv_freq, 0.0, true);
  require_cpu_kernels(s, "rope_backward");
  cpu::rope_backward(s.operand(dx), s.operand(positions), B, T, H, D, s.operand(inv_freq));
}

void rope_forward(const Stream& s, float* x, const int64_t* positions, int64_t B, int64_t T,
                  int64_t H, int64_t D, double theta) {
  if (const DeviceBackend* b = s.backend())
    return b->rope(x, positions, B, T, H, D, nullptr, theta, false);
  require_cpu_kernels(s, "rope_forward");
  cpu::rope_forward(s.operand(x), s.operand(positions), B, T, H, D, theta);
}

void rope_backward(const Stream& s, float* dx, const int64_t* positions, int64_t B, int64_t T,
                   int64_t H, int64_t D, double theta) {
  if (const DeviceBackend* b = s.backend())
    return b->rope(dx, positions, B, T, H, D, nullptr, theta, true);
  require_cpu_kernels(s, "rope_backward");
  cpu::rope_backward(s.operand(dx), s.operand(positions), B, T, H, D, theta);
}

}  // namespace parallm::ops
