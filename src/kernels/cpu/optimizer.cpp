// SGD, Adam, AdamW and gradient arithmetic on flat fp32 buffers. Bias corrections are
// computed in double once per call; the per-element update runs in float like
// PyTorch's. sum_squares sums fixed-size chunks then adds the chunk results in
// index order, so the global norm is bitwise independent of the thread count.
#include "kernels/cpu/optimizer.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <vector>

#include "base/error.h"

namespace parallm::cpu {

namespace {

constexpr int64_t kParallelMin = 32768;
constexpr int64_t kChunk = 1 << 16;  // sum_squares partial size (fixed, not per thread)

}  // namespace

namespace {
// Shared by Adam and AdamW: l2 is added to the gradient, decay multiplies p.
void adam_update(float* p, const float* g, float* m, float* v, int64_t n, const AdamWParams& h,
                 double l2, double decoupled) {
  PX_CHECK(h.step >= 1, "adam step={} must be >= 1 (1-based)", h.step);
  const double bc1 = 1.0 - std::pow(h.beta1, static_cast<double>(h.step));
  const double bc2 = 1.0 - std::pow(h.beta2, static_cast<double>(h.step));
  // PyTorch: p *= 1 - lr*wd; p -= (lr/bc1) * m / (sqrt(v)/sqrt(bc2) + eps).
  const float decay = static_cast<float>(1.0 - h.lr * decoupled);
  const float wd = static_cast<float>(l2);
  const float b1 = static_cast<float>(h.beta1), b2 = static_cast<float>(h.beta2);
  const float one_b1 = static_cast<float>(1.0 - h.beta1),
              one_b2 = static_cast<float>(1.0 - h.beta2);
  const float step_size = static_cast<float>(h.lr / bc1);
  const float bc2_sqrt = static_cast<float>(std::sqrt(bc2));
  const float eps = static_cast<float>(h.eps);
#pragma omp parallel for simd schedule(static) if (n > kParallelMin)
  for (int64_t i = 0; i < n; ++i) {
    const float gi = g[i] + wd * p[i];
    const float mi = b1 * m[i] + one_b1 * gi;
    const float vi = b2 * v[i] + one_b2 * gi * gi;
    m[i] = mi;
    v[i] = vi;
    const float denom = std::sqrt(vi) / bc2_sqrt + eps;
    p[i] = p[i] * decay - step_size * (mi / denom);
  }
}
}  // namespace

void adamw_step(float* p, const float* g, float* m, float* v, int64_t n, const AdamWParams& h) {
  adam_update(p, g, m, v, n, h, 0.0, h.weight_decay);
}

void adam_step(float* p, const float* g, float* m, float* v, int64_t n, const AdamWParams& h) {
  adam_update(p, g, m, v, n, h, h.weight_decay, 0.0);
}

void sgd_step(float* p, const float* g, float* buf, int64_t n, const SgdParams& h) {
  const float lr = static_cast<float>(h.lr), wd = static_cast<float>(h.weight_decay);
  const float mu = static_cast<float>(h.momentum);
  if (h.momentum == 0.0) {
#pragma omp parallel for simd schedule(static) if (n > kParallelMin)
    for (int64_t i = 0; i < n; ++i) p[i] -= lr * (g[i] + wd * p[i]);
    return;
  }
  const bool nesterov = h.nesterov;
#pragma omp parallel for simd schedule(static) if (n > kParallelMin)
  for (int64_t i = 0; i < n; ++i) {
    const float d = g[i] + wd * p[i];
    const float b = mu * buf[i] + d;
    buf[i] = b;
    p[i] -= lr * (nesterov ? d + mu * b : b);
  }
}

double sum_squares(const float* x, int64_t n) {
  const int64_t nchunks = (n + kChunk - 1) / kChunk;
  std::vector<double> part(static_cast<size_t>(nchunks), 0.0);
#pragma omp parallel for schedule(static) if (n > kParallelMin)
  for (int64_t c = 0; c < nchunks; ++c) {
    const int64_t b = c * kChunk, e = std::min(n, b + kChunk);
    double s = 0;
#pragma omp simd reduction(+ : s)
    for (int64_t i = b; i < e; ++i) s += static_cast<double>(x[i]) * static_cast<double>(x[i]);
    part[c] = s;
  }
  double total = 0;
  for (double s : part) total += s;
  return total;
}

void scale_inplace(float* x, int64_t n, float s) {
#pragma omp parallel for simd schedule(static) if (n > kParallelMin)
  for (int64_t i = 0; i < n; ++i) x[i] *= s;
}

bool has_nonfinite(const float* x, int64_t n) {
  // Exponent bits all ones <=> Inf or NaN; an integer test vectorises cleanly.
  constexpr uint32_t kExp = 0x7f800000u;
  int bad = 0;
#pragma omp parallel for simd schedule(static) reduction(| : bad) if (n > kParallelMin)
  for (int64_t i = 0; i < n; ++i) bad |= (std::bit_cast<uint32_t>(x[i]) & kExp) == kExp;
  return bad != 0;
}

}  // namespace parallm::cpu
