// GELU (tanh form), SwiGLU, GeGLU and the small vector updates. Every loop is a flat
// elementwise map, split statically over threads and vectorised (float uses
// the SIMD exp/tanh from vec_math.h, double uses libm as the exact reference).
// Backward kernels accumulate into their outputs.
#include "kernels/cpu/activation.h"

#include <cmath>

#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/vec_math.h"

namespace parallm::cpu {

namespace {

constexpr int64_t kParallelMin = 32768;  // elements; below this one thread is faster
constexpr double kSqrt2OverPi = 0.79788456080286535588;
constexpr double kGeluCubic = 0.044715;

// gelu(x) and gelu'(x) of the tanh form, shared by GELU and GeGLU so both
// round alike.
template <class T>
inline T gelu_value(T x) {
  const T s = static_cast<T>(kSqrt2OverPi), c = static_cast<T>(kGeluCubic);
  const T u = s * (x + c * x * x * x);
  return T(0.5) * x * (T(1) + tanh_t<T>(u));
}

template <class T>
inline T gelu_slope(T x) {
  const T s = static_cast<T>(kSqrt2OverPi), c = static_cast<T>(kGeluCubic);
  const T u = s * (x + c * x * x * x);
  const T t = tanh_t<T>(u);
  const T du = s * (T(1) + T(3) * c * x * x);
  return T(0.5) * (T(1) + t) + T(0.5) * x * (T(1) - t * t) * du;
}

}  // namespace

template <class T>
void gelu_forward(T* out, const T* inp, int64_t n) {
  for_each_index(n, kParallelMin, [=](int64_t i) { out[i] = gelu_value<T>(inp[i]); });
}

template <class T>
void gelu_backward(T* dinp, const T* inp, const T* dout, int64_t n) {
  for_each_index(n, kParallelMin, [=](int64_t i) { dinp[i] += gelu_slope<T>(inp[i]) * dout[i]; });
}

template <class T>
void swiglu_forward(T* out, const T* gate, const T* up, int64_t n) {
  for_each_index(n, kParallelMin, [=](int64_t i) {
    const T g = gate[i];
    out[i] = g * sigmoid_t<T>(g) * up[i];
  });
}

template <class T>
void swiglu_backward(T* dgate, T* dup, const T* dout, const T* gate, const T* up, int64_t n) {
  for_each_index(n, kParallelMin, [=](int64_t i) {
    const T g = gate[i], sg = sigmoid_t<T>(g), d = dout[i];
    // silu'(g) = sigmoid(g) * (1 + g * (1 - sigmoid(g)))
    dgate[i] += d * up[i] * sg * (T(1) + g * (T(1) - sg));
    dup[i] += d * g * sg;
  });
}

template <class T>
void geglu_forward(T* out, const T* gate, const T* up, int64_t n) {
  for_each_index(n, kParallelMin, [=](int64_t i) { out[i] = gelu_value<T>(gate[i]) * up[i]; });
}

template <class T>
void geglu_backward(T* dgate, T* dup, const T* dout, const T* gate, const T* up, int64_t n) {
  for_each_index(n, kParallelMin, [=](int64_t i) {
    const T g = gate[i], d = dout[i];
    dgate[i] += d * up[i] * gelu_slope<T>(g);
    dup[i] += d * gelu_value<T>(g);
  });
}

template <class T>
void add_inplace(T* y, const T* x, int64_t n) {
  for_each_index(n, kParallelMin, [=](int64_t i) { y[i] += x[i]; });
}

template <class T>
void axpy(T* y, T a, const T* x, int64_t n) {
  for_each_index(n, kParallelMin, [=](int64_t i) { y[i] += a * x[i]; });
}

#define PX_INSTANTIATE(T)                                                          \
  template void gelu_forward<T>(T*, const T*, int64_t);                            \
  template void gelu_backward<T>(T*, const T*, const T*, int64_t);                 \
  template void swiglu_forward<T>(T*, const T*, const T*, int64_t);                \
  template void swiglu_backward<T>(T*, T*, const T*, const T*, const T*, int64_t); \
  template void geglu_forward<T>(T*, const T*, const T*, int64_t);                 \
  template void geglu_backward<T>(T*, T*, const T*, const T*, const T*, int64_t);  \
  template void add_inplace<T>(T*, const T*, int64_t);                             \
  template void axpy<T>(T*, T, const T*, int64_t);
PX_INSTANTIATE(float)
PX_INSTANTIATE(double)
#undef PX_INSTANTIATE

}  // namespace parallm::cpu
