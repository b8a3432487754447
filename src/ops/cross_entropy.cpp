#include "ops/cross_entropy.h"

#include "kernels/cpu/cross_entropy.h"
#include "ops/device_backend.h"

namespace parallm::ops {

void ce_row_max(const Stream& s, float* mx, const float* logits, int64_t n, int64_t V) {
  if (const DeviceBackend* b = s.backend()) return b->ce_row_max(mx, logits, n, V);
  require_cpu_kernels(s, "ce_row_max");
  cpu::ce_row_max(s.operand(mx), s.operand(logits), n, V);
}

void ce_row_sumexp(const Stream& s, float* sumexp, const float* logits, const float* mx, int64_t n,
                   int64_t V) {
  if (const DeviceBackend* b = s.backend()) return b->ce_row_sumexp(sumexp, logits, mx, n, V);
  require_cpu_kernels(s, "ce_row_sumexp");
  cpu::ce_row_sumexp(s.operand(sumexp), s.operand(logits), s.operand(mx), n, V);
}

void ce_target_logit(const Stream& s, float* tl, const float* logits, const int32_t* targets,
                     int64_t n, int64_t V, int64_t vocab_begin) {
  if (const DeviceBackend* b = s.backend()) return b->ce_target_logit(tl, logits, targets, n, V, vocab_begin);
  require_cpu_kernels(s, "ce_target_logit");
  cpu::ce_target_logit(s.operand(tl), s.operand(logits), s.operand(targets), n, V, vocab_begin);
}

void ce_softmax_grad_inplace(const Stream& s, float* logits, const float* lse,
                             const int32_t* targets, const float* row_scale, int64_t n, int64_t V,
                             int64_t vocab_begin) {
  if (const DeviceBackend* b = s.backend()) return b->ce_softmax_grad_inplace(logits, lse, targets, row_scale, n, V, vocab_begin);
  require_cpu_kernels(s, "ce_softmax_grad_inplace");
  cpu::ce_softmax_grad_inplace(s.operand(logits), s.operand(lse), s.operand(targets),
                               s.operand(row_scale), n, V, vocab_begin);
}

double log_sum_exp(const Stream& s, const float* x, int64_t n) {
  if (const DeviceBackend* b = s.backend()) return b->log_sum_exp(x, n);
  require_cpu_kernels(s, "log_sum_exp");
  return cpu::log_sum_exp(s.operand(x), n);
}

}  // namespace parallm::ops
