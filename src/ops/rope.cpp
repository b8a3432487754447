#include "ops/rope.h"

#include "kernels/cpu/rope.h"

namespace parallm::ops {

void rope_forward(const Stream& s, float* x, const int64_t* positions, int64_t B, int64_t T,
                  int64_t H, int64_t D, const double* inv_freq) {
  require_cpu_kernels(s, "rope_forward");
  cpu::rope_forward(s.operand(x), s.operand(positions), B, T, H, D, s.operand(inv_freq));
}

void rope_backward(const Stream& s, float* dx, const int64_t* positions, int64_t B, int64_t T,
                   int64_t H, int64_t D, const double* inv_freq) {
  require_cpu_kernels(s, "rope_backward");
  cpu::rope_backward(s.operand(dx), s.operand(positions), B, T, H, D, s.operand(inv_freq));
}

void rope_forward(const Stream& s, float* x, const int64_t* positions, int64_t B, int64_t T,
                  int64_t H, int64_t D, double theta) {
  require_cpu_kernels(s, "rope_forward");
  cpu::rope_forward(s.operand(x), s.operand(positions), B, T, H, D, theta);
}

void rope_backward(const Stream& s, float* dx, const int64_t* positions, int64_t B, int64_t T,
                   int64_t H, int64_t D, double theta) {
  require_cpu_kernels(s, "rope_backward");
  cpu::rope_backward(s.operand(dx), s.operand(positions), B, T, H, D, theta);
}

}  // namespace parallm::ops
