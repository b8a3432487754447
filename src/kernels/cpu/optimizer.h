// Optimizer and gradient arithmetic on flat fp32 buffers.
#pragma once
#include <cstdint>

namespace parallm::cpu {

struct AdamWParams {
  double lr;
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
  double weight_decay = 0.0;  // decoupled: p -= lr * wd * p (0 for norms and biases)
  int64_t step = 1;           // 1-based, for bias correction
};

// PyTorch torch.optim.AdamW semantics (decay applied before the Adam update).
void adamw_step(float* p, const float* g, float* m, float* v, int64_t n, const AdamWParams& h);

// Sum of squares in double (for the global gradient norm).
double sum_squares(const float* x, int64_t n);
void scale_inplace(float* x, int64_t n, float s);
// True if any element is Inf or NaN.
bool has_nonfinite(const float* x, int64_t n);

}  // namespace parallm::cpu
