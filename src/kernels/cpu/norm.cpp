// LayerNorm and RMSNorm kernels. Rows are independent in forward and in the
// input gradient (parallel over rows). The weight/bias gradients sum over rows;
// each thread owns a block of columns and walks the rows in order, so every
// sum has one fixed order: results are bitwise independent of thread count.
#include "kernels/cpu/norm.h"

#include <algorithm>
#include <cmath>

namespace parallm::cpu {

namespace {

constexpr int64_t kColBlock = 64;
constexpr int64_t kParallelMin = 8192;  // elements below which threads cost more than they save

// acc_w[j] += sum_n dout[n, j] * xhat[n, j] and acc_b[j] += sum_n dout[n, j] over
// column block [c0, c0 + width), xhat = (x - shift[n]) * rstd[n] (shift null: 0).
template <class T>
void column_block_grads(T* dweight, T* dbias, const T* dout, const T* inp, const T* shift,
                        const T* rstd, int64_t N, int64_t C, int64_t c0, int64_t width) {
  double acc_w[kColBlock] = {}, acc_b[kColBlock] = {};
  for (int64_t n = 0; n < N; ++n) {
    const T* x = inp + n * C + c0;
    const T* d = dout + n * C + c0;
    const T m = shift != nullptr ? shift[n] : T(0), r = rstd[n];
#pragma omp simd
    for (int64_t j = 0; j < width; ++j) {
      acc_w[j] += static_cast<double>(d[j] * ((x[j] - m) * r));
      acc_b[j] += static_cast<double>(d[j]);
    }
  }
  if (dweight != nullptr)
    for (int64_t j = 0; j < width; ++j) dweight[c0 + j] += static_cast<T>(acc_w[j]);
  if (dbias != nullptr)
    for (int64_t j = 0; j < width; ++j) dbias[c0 + j] += static_cast<T>(acc_b[j]);
}

template <class T>
void weight_grads(T* dweight, T* dbias, const T* dout, const T* inp, const T* shift, const T* rstd,
                  int64_t N, int64_t C) {
  if (dweight == nullptr && dbias == nullptr) return;
  const int64_t nblocks = (C + kColBlock - 1) / kColBlock;
#pragma omp parallel for schedule(static) if (N * C > kParallelMin)
  for (int64_t b = 0; b < nblocks; ++b) {
    const int64_t c0 = b * kColBlock;
    column_block_grads(dweight, dbias, dout, inp, shift, rstd, N, C, c0,
                       std::min(kColBlock, C - c0));
  }
}

}  // namespace

template <class T>
void layernorm_forward(T* out, T* mean, T* rstd, const T* inp, const T* weight, const T* bias,
                       int64_t N, int64_t C, double eps) {
#pragma omp parallel for schedule(static) if (N * C > kParallelMin)
  for (int64_t n = 0; n < N; ++n) {
    const T* x = inp + n * C;
    T s = 0;
#pragma omp simd reduction(+ : s)
    for (int64_t i = 0; i < C; ++i) s += x[i];
    const T m = s / static_cast<T>(C);
    // Two-pass variance with the rounding error of the mean subtracted out
    // (the sum of deviations would be 0 in exact arithmetic).
    T d1 = 0, d2 = 0;
#pragma omp simd reduction(+ : d1, d2)
    for (int64_t i = 0; i < C; ++i) {
      const T d = x[i] - m;
      d1 += d;
      d2 += d * d;
    }
    const T var = std::max(T(0), (d2 - d1 * d1 / static_cast<T>(C)) / static_cast<T>(C));
    const T r = T(1) / std::sqrt(var + static_cast<T>(eps));
    T* o = out + n * C;
    if (bias != nullptr) {
#pragma omp simd
      for (int64_t i = 0; i < C; ++i) o[i] = (x[i] - m) * r * weight[i] + bias[i];
    } else {
#pragma omp simd
      for (int64_t i = 0; i < C; ++i) o[i] = (x[i] - m) * r * weight[i];
    }
    if (mean != nullptr) mean[n] = m;
    if (rstd != nullptr) rstd[n] = r;
  }
}

template <class T>
void layernorm_backward(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp, const T* weight,
                        const T* mean, const T* rstd, int64_t N, int64_t C) {
  if (dinp != nullptr) {
#pragma omp parallel for schedule(static) if (N * C > kParallelMin)
    for (int64_t n = 0; n < N; ++n) {
      const T* x = inp + n * C;
      const T* d = dout + n * C;
      const T m = mean[n], r = rstd[n];
      T sg = 0, sgx = 0;  // sum of g = dout * w, and of g * xhat
#pragma omp simd reduction(+ : sg, sgx)
      for (int64_t i = 0; i < C; ++i) {
        const T g = d[i] * weight[i];
        sg += g;
        sgx += g * ((x[i] - m) * r);
      }
      const T a = sg / static_cast<T>(C), b = sgx / static_cast<T>(C);
      T* dx = dinp + n * C;
#pragma omp simd
      for (int64_t i = 0; i < C; ++i) {
        const T xhat = (x[i] - m) * r;
        dx[i] += (d[i] * weight[i] - a - xhat * b) * r;
      }
    }
  }
  weight_grads(dweight, dbias, dout, inp, mean, rstd, N, C);
}

template <class T>
void rmsnorm_forward(T* out, T* rstd, const T* inp, const T* weight, int64_t N, int64_t C,
                     double eps, bool adds_one) {
  // weight + 0 is weight exactly: the plain norm keeps its bits.
  const T one = adds_one ? T(1) : T(0);
#pragma omp parallel for schedule(static) if (N * C > kParallelMin)
  for (int64_t n = 0; n < N; ++n) {
    const T* x = inp + n * C;
    T ss = 0;
#pragma omp simd reduction(+ : ss)
    for (int64_t i = 0; i < C; ++i) ss += x[i] * x[i];
    const T r = T(1) / std::sqrt(ss / static_cast<T>(C) + static_cast<T>(eps));
    T* o = out + n * C;
#pragma omp simd
    for (int64_t i = 0; i < C; ++i) o[i] = x[i] * r * (weight[i] + one);
    if (rstd != nullptr) rstd[n] = r;
  }
}

template <class T>
void rmsnorm_backward(T* dinp, T* dweight, const T* dout, const T* inp, const T* weight,
                      const T* rstd, int64_t N, int64_t C, bool adds_one) {
  const T one = adds_one ? T(1) : T(0);
  if (dinp != nullptr) {
#pragma omp parallel for schedule(static) if (N * C > kParallelMin)
    for (int64_t n = 0; n < N; ++n) {
      const T* x = inp + n * C;
      const T* d = dout + n * C;
      const T r = rstd[n];
      T sgx = 0;
#pragma omp simd reduction(+ : sgx)
      for (int64_t i = 0; i < C; ++i) sgx += d[i] * (weight[i] + one) * x[i];
      // d rstd / d x_i = -rstd^3 x_i / C
      const T c = r * r * sgx / static_cast<T>(C);
      T* dx = dinp + n * C;
#pragma omp simd
      for (int64_t i = 0; i < C; ++i) dx[i] += r * (d[i] * (weight[i] + one) - x[i] * c);
    }
  }
  weight_grads<T>(dweight, nullptr, dout, inp, nullptr, rstd, N, C);
}

#define PX_INSTANTIATE(T)                                                                        \
  template void layernorm_forward<T>(T*, T*, T*, const T*, const T*, const T*, int64_t, int64_t, \
                                     double);                                                    \
  template void layernorm_backward<T>(T*, T*, T*, const T*, const T*, const T*, const T*,        \
                                      const T*, int64_t, int64_t);                               \
  template void rmsnorm_forward<T>(T*, T*, const T*, const T*, int64_t, int64_t, double, bool);  \
  template void rmsnorm_backward<T>(T*, T*, const T*, const T*, const T*, const T*, int64_t,     \
                                    int64_t, bool);
PX_INSTANTIATE(float)
PX_INSTANTIATE(double)
#undef PX_INSTANTIATE

}  // namespace parallm::cpu
