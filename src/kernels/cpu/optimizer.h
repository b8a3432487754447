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
// PyTorch torch.optim.Adam semantics: h.weight_decay is L2, added to the
// gradient (g + wd * p) before the moments; no decoupled decay.
void adam_step(float* p, const float* g, float* m, float* v, int64_t n, const AdamWParams& h);

struct SgdParams {
  double lr;
  double momentum = 0.0;  // 0: plain SGD (buf unused, may be null)
  bool nesterov = false;
  double weight_decay = 0.0;  // L2: added to the gradient
};
// PyTorch torch.optim.SGD semantics with dampening 0: d = g + wd * p;
// buf = momentum * buf + d (a zero buffer makes step 1 torch's buf = d);
// d = nesterov ? d + momentum * buf : buf; p -= lr * d.
void sgd_step(float* p, const float* g, float* buf, int64_t n, const SgdParams& h);

// Sum of squares in double (for the global gradient norm).
double sum_squares(const float* x, int64_t n);
void scale_inplace(float* x, int64_t n, float s);
// True if any element is Inf or NaN.
bool has_nonfinite(const float* x, int64_t n);

}  // namespace parallm::cpu
