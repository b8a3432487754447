#include "ops/optimizer.h"

#include "ops/device_backend.h"

namespace parallm::ops {

void adamw_step(const Stream& s, float* p, const float* g, float* m, float* v, int64_t n,
                const AdamWParams& h) {
  if (const DeviceBackend* b = s.backend()) return b->adamw_step(p, g, m, v, n, h);
  require_cpu_kernels(s, "adamw_step");
  cpu::adamw_step(s.operand(p), s.operand(g), s.operand(m), s.operand(v), n, h);
}

void adam_step(const Stream& s, float* p, const float* g, float* m, float* v, int64_t n,
               const AdamWParams& h) {
  if (const DeviceBackend* b = s.backend()) return b->adam_step(p, g, m, v, n, h);
  require_cpu_kernels(s, "adam_step");
  cpu::adam_step(s.operand(p), s.operand(g), s.operand(m), s.operand(v), n, h);
}

void sgd_step(const Stream& s, float* p, const float* g, float* buf, int64_t n,
              const SgdParams& h) {
  if (const DeviceBackend* b = s.backend()) return b->sgd_step(p, g, buf, n, h);
  require_cpu_kernels(s, "sgd_step");
  cpu::sgd_step(s.operand(p), s.operand(g), s.operand(buf), n, h);
}

double sum_squares(const Stream& s, const float* x, int64_t n) {
  if (const DeviceBackend* b = s.backend()) return b->sum_squares(x, n);
  require_cpu_kernels(s, "sum_squares");
  return cpu::sum_squares(s.operand(x), n);
}

void scale_inplace(const Stream& s, float* x, int64_t n, float scale) {
  if (const DeviceBackend* b = s.backend()) return b->scale_inplace(x, n, scale);
  require_cpu_kernels(s, "scale_inplace");
  cpu::scale_inplace(s.operand(x), n, scale);
}

bool has_nonfinite(const Stream& s, const float* x, int64_t n) {
  if (const DeviceBackend* b = s.backend()) return b->has_nonfinite(x, n);
  require_cpu_kernels(s, "has_nonfinite");
  return cpu::has_nonfinite(s.operand(x), n);
}

}  // namespace parallm::ops
