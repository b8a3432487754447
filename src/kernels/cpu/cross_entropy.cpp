// Softmax cross-entropy pieces for (possibly vocab-sharded) logits chunks.
// Every step is per row, so rows run in parallel; float uses the SIMD exp but
// sums exponentials in double, since V reaches 1e5 and float sums would lose
// ~1e-3 relative. Invariant: exp arguments are always <= 0 (max subtracted).
#include "kernels/cpu/cross_entropy.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/cpu/vec_math.h"

namespace parallm::cpu {

namespace {

constexpr int64_t kParallelMin = 16384;  // elements

inline bool in_shard(int32_t target, int64_t V, int64_t vocab_begin) {
  return target >= 0 && target >= vocab_begin && target < vocab_begin + V;
}

}  // namespace

template <class T>
void ce_row_max(T* mx, const T* logits, int64_t n, int64_t V) {
#pragma omp parallel for schedule(static) if (n * V > kParallelMin)
  for (int64_t i = 0; i < n; ++i) {
    const T* l = logits + i * V;
    T m = -std::numeric_limits<T>::infinity();
#pragma omp simd reduction(max : m)
    for (int64_t j = 0; j < V; ++j) m = std::max(m, l[j]);
    mx[i] = m;
  }
}

template <class T>
void ce_row_sumexp(T* sumexp, const T* logits, const T* mx, int64_t n, int64_t V) {
#pragma omp parallel for schedule(static) if (n * V > kParallelMin)
  for (int64_t i = 0; i < n; ++i) {
    const T* l = logits + i * V;
    const T m = mx[i];
    double s = 0;
#pragma omp simd reduction(+ : s)
    for (int64_t j = 0; j < V; ++j) s += static_cast<double>(exp_t<T>(l[j] - m));
    sumexp[i] = static_cast<T>(s);
  }
}

template <class T>
void ce_target_logit(T* tl, const T* logits, const int32_t* targets, int64_t n, int64_t V,
                     int64_t vocab_begin) {
  for (int64_t i = 0; i < n; ++i) {
    const int32_t t = targets[i];
    tl[i] = in_shard(t, V, vocab_begin) ? logits[i * V + (t - vocab_begin)] : T(0);
  }
}

template <class T>
void ce_softmax_grad_inplace(T* logits, const T* lse, const int32_t* targets, const T* row_scale,
                             int64_t n, int64_t V, int64_t vocab_begin) {
#pragma omp parallel for schedule(static) if (n * V > kParallelMin)
  for (int64_t i = 0; i < n; ++i) {
    T* l = logits + i * V;
    const int32_t t = targets[i];
    if (t < 0) {
      std::fill(l, l + V, T(0));
      continue;
    }
    const T z = lse[i], scale = row_scale != nullptr ? row_scale[i] : T(1);
#pragma omp simd
    for (int64_t j = 0; j < V; ++j) l[j] = exp_t<T>(l[j] - z) * scale;
    if (in_shard(t, V, vocab_begin)) l[t - vocab_begin] -= scale;
  }
}

#define PX_INSTANTIATE(T)                                                                    \
  template void ce_row_max<T>(T*, const T*, int64_t, int64_t);                               \
  template void ce_row_sumexp<T>(T*, const T*, const T*, int64_t, int64_t);                  \
  template void ce_target_logit<T>(T*, const T*, const int32_t*, int64_t, int64_t, int64_t); \
  template void ce_softmax_grad_inplace<T>(T*, const T*, const int32_t*, const T*, int64_t,  \
                                           int64_t, int64_t);
PX_INSTANTIATE(float)
PX_INSTANTIATE(double)
#undef PX_INSTANTIATE

double log_sum_exp(const float* p, int64_t n) {
  // libm's scalar exp made this ~0.5 ms of a 50257 row; exp_f64_nonpositive
  // vectorises, and the simd reductions let the loops run 4 wide (sums in a
  // fixed order for a given build).
  double mx = -std::numeric_limits<double>::infinity();
#pragma omp simd reduction(max : mx)
  for (int64_t i = 0; i < n; ++i) mx = std::max(mx, static_cast<double>(p[i]));
  double sum = 0.0;
#pragma omp simd reduction(+ : sum)
  for (int64_t i = 0; i < n; ++i) sum += exp_f64_nonpositive(static_cast<double>(p[i]) - mx);
  return mx + std::log(sum);
}

}  // namespace parallm::cpu
