#include "ops/norm.h"

#include "kernels/cpu/norm.h"
#include "ops/device_backend.h"

namespace parallm::ops {

void layernorm_forward(const Stream& s, float* out, float* mean, float* rstd, const float* inp,
                       const float* weight, const float* bias, int64_t N, int64_t C, double eps) {
  if (const DeviceBackend* b = s.backend()) return b->layernorm_forward(out, mean, rstd, inp, weight, bias, N, C, eps);
  require_cpu_kernels(s, "layernorm_forward");
  cpu::layernorm_forward(s.operand(out), s.operand(mean), s.operand(rstd), s.operand(inp),
                         s.operand(weight), s.operand(bias), N, C, eps);
}

void layernorm_backward(const Stream& s, float* dinp, float* dweight, float* dbias,
                        const float* dout, const float* inp, const float* weight, const float* mean,
                        const float* rstd, int64_t N, int64_t C) {
  if (const DeviceBackend* b = s.backend()) return b->layernorm_backward(dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C);
  require_cpu_kernels(s, "layernorm_backward");
  cpu::layernorm_backward(s.operand(dinp), s.operand(dweight), s.operand(dbias), s.operand(dout),
                          s.operand(inp), s.operand(weight), s.operand(mean), s.operand(rstd), N,
                          C);
}

void rmsnorm_forward(const Stream& s, float* out, float* rstd, const float* inp,
                     const float* weight, int64_t N, int64_t C, double eps, bool adds_one) {
  if (const DeviceBackend* b = s.backend())
    return b->rmsnorm_forward(out, rstd, inp, weight, N, C, eps, adds_one);
  require_cpu_kernels(s, "rmsnorm_forward");
  cpu::rmsnorm_forward(s.operand(out), s.operand(rstd), s.operand(inp), s.operand(weight), N, C,
                       eps, adds_one);
}

void rmsnorm_backward(const Stream& s, float* dinp, float* dweight, const float* dout,
                      const float* inp, const float* weight, const float* rstd, int64_t N,
                      int64_t C, bool adds_one) {
  if (const DeviceBackend* b = s.backend())
    return b->rmsnorm_backward(dinp, dweight, dout, inp, weight, rstd, N, C, adds_one);
  require_cpu_kernels(s, "rmsnorm_backward");
  cpu::rmsnorm_backward(s.operand(dinp), s.operand(dweight), s.operand(dout), s.operand(inp),
                        s.operand(weight), s.operand(rstd), N, C, adds_one);
}

}  // namespace parallm::ops
