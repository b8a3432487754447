#include "ops/activation.h"

#include "kernels/cpu/activation.h"
#include "ops/device_backend.h"

namespace parallm::ops {

void gelu_forward(const Stream& s, float* out, const float* inp, int64_t n) {
  if (const DeviceBackend* b = s.backend()) return b->gelu_forward(out, inp, n);
  require_cpu_kernels(s, "gelu_forward");
  cpu::gelu_forward(s.operand(out), s.operand(inp), n);
}

void gelu_backward(const Stream& s, float* dinp, const float* inp, const float* dout, int64_t n) {
  if (const DeviceBackend* b = s.backend()) return b->gelu_backward(dinp, inp, dout, n);
  require_cpu_kernels(s, "gelu_backward");
  cpu::gelu_backward(s.operand(dinp), s.operand(inp), s.operand(dout), n);
}

void swiglu_forward(const Stream& s, float* out, const float* gate, const float* up, int64_t n) {
  if (const DeviceBackend* b = s.backend()) return b->swiglu_forward(out, gate, up, n);
  require_cpu_kernels(s, "swiglu_forward");
  cpu::swiglu_forward(s.operand(out), s.operand(gate), s.operand(up), n);
}

void swiglu_backward(const Stream& s, float* dgate, float* dup, const float* dout,
                     const float* gate, const float* up, int64_t n) {
  if (const DeviceBackend* b = s.backend()) return b->swiglu_backward(dgate, dup, dout, gate, up, n);
  require_cpu_kernels(s, "swiglu_backward");
  cpu::swiglu_backward(s.operand(dgate), s.operand(dup), s.operand(dout), s.operand(gate),
                       s.operand(up), n);
}

void geglu_forward(const Stream& s, float* out, const float* gate, const float* up, int64_t n) {
  if (const DeviceBackend* b = s.backend()) return b->geglu_forward(out, gate, up, n);
  require_cpu_kernels(s, "geglu_forward");
  cpu::geglu_forward(s.operand(out), s.operand(gate), s.operand(up), n);
}

void geglu_backward(const Stream& s, float* dgate, float* dup, const float* dout, const float* gate,
                    const float* up, int64_t n) {
  if (const DeviceBackend* b = s.backend()) return b->geglu_backward(dgate, dup, dout, gate, up, n);
  require_cpu_kernels(s, "geglu_backward");
  cpu::geglu_backward(s.operand(dgate), s.operand(dup), s.operand(dout), s.operand(gate),
                      s.operand(up), n);
}

void add_inplace(const Stream& s, float* y, const float* x, int64_t n) {
  if (const DeviceBackend* b = s.backend()) return b->add_inplace(y, x, n);
  require_cpu_kernels(s, "add_inplace");
  cpu::add_inplace(s.operand(y), s.operand(x), n);
}

void axpy(const Stream& s, float* y, float a, const float* x, int64_t n) {
  if (const DeviceBackend* b = s.backend()) return b->axpy(y, a, x, n);
  require_cpu_kernels(s, "axpy");
  cpu::axpy(s.operand(y), a, s.operand(x), n);
}

void add_bias_rows(const Stream& s, float* out, const float* bias, int64_t N, int64_t C) {
  if (const DeviceBackend* b = s.backend()) return b->add_bias_rows(out, bias, N, C);
  require_cpu_kernels(s, "add_bias_rows");
  float* o = s.operand(out);
  const float* w = s.operand(bias);
  for (int64_t n = 0; n < N; ++n) cpu::add_inplace(o + n * C, w, C);
}

}  // namespace parallm::ops
