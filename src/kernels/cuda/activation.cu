// GELU, SwiGLU, GeGLU and adds (activation.h): flat grid-stride maps over 64-bit
// pack indices, fp32 math on every element whatever the storage type. When
// every pointer is 16-byte aligned the bulk moves as 16-byte packs
// (pack.cuh) and the last n % W elements take the scalar kernel; otherwise
// all of it does. Both run the same per-element code, so the results are
// bitwise the same. Each element is read and written by exactly one thread,
// so aliasing out with an input is safe.
#include <type_traits>

#include "kernels/cuda/activation.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/gelu.cuh"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/pack.cuh"
#include "kernels/cuda/reduce.cuh"

namespace parallm::cuda {
namespace {

__device__ __forceinline__ float sigmoid_fp32(float x) { return 1.f / (1.f + expf(-x)); }

// Each kernel: `packs` packs of W elements, pack p at element p * W.
template <class T, int W>
__global__ void gelu_forward_kernel(T* out, const T* inp, int64_t packs) {
  for (int64_t p = grid_index(); p < packs; p += grid_stride()) {
    const auto x = load_pack<T, W>(inp + p * W);
    Pack<T, W> y;
#pragma unroll
    for (int k = 0; k < W; ++k) y.v[k] = from_float<T>(gelu_tanh(to_float(x.v[k])));
    store_pack<T, W>(out + p * W, y);
  }
}

template <class T, int W>
__global__ void gelu_backward_kernel(T* dinp, const T* inp, const T* dout, int64_t packs) {
  for (int64_t p = grid_index(); p < packs; p += grid_stride()) {
    const auto x = load_pack<T, W>(inp + p * W);
    const auto d = load_pack<T, W>(dout + p * W);
    auto acc = load_pack<T, W>(dinp + p * W);
#pragma unroll
    for (int k = 0; k < W; ++k) {
      const float grad = gelu_tanh_grad(to_float(x.v[k]));
      acc.v[k] = from_float<T>(to_float(acc.v[k]) + grad * to_float(d.v[k]));
    }
    store_pack<T, W>(dinp + p * W, acc);
  }
}

// The gates of the gated MLPs, each term in the CPU kernels' order of
// operations (kernels/cpu/activation.cpp), so fp32 agrees with them to the
// ulp of the shared exp and tanh: value(g) multiplies up; backward adds
// dgate(d, u, g) and dup(d, g).
struct SiluGate {  // SwiGLU: silu(g) = g * sigmoid(g)
  __device__ static float value(float g) { return g * sigmoid_fp32(g); }
  // silu'(g) = sigmoid(g) * (1 + g * (1 - sigmoid(g)))
  __device__ static float dgate(float d, float u, float g) {
    const float sg = sigmoid_fp32(g);
    return d * u * sg * (1.f + g * (1.f - sg));
  }
  __device__ static float dup(float d, float g) { return d * g * sigmoid_fp32(g); }
};
struct GeluGate {  // GeGLU: gelu(g), the tanh form
  __device__ static float value(float g) { return gelu_tanh(g); }
  __device__ static float dgate(float d, float u, float g) { return d * u * gelu_tanh_grad(g); }
  __device__ static float dup(float d, float g) { return d * gelu_tanh(g); }
};

template <class Gate, class T, int W>
__global__ void gated_forward_kernel(T* out, const T* gate, const T* up, int64_t packs) {
  for (int64_t p = grid_index(); p < packs; p += grid_stride()) {
    const auto g = load_pack<T, W>(gate + p * W);
    const auto u = load_pack<T, W>(up + p * W);
    Pack<T, W> y;
#pragma unroll
    for (int k = 0; k < W; ++k)
      y.v[k] = from_float<T>(Gate::value(to_float(g.v[k])) * to_float(u.v[k]));
    store_pack<T, W>(out + p * W, y);
  }
}

template <class Gate, class T, int W>
__global__ void gated_backward_kernel(T* dgate, T* dup, const T* dout, const T* gate, const T* up,
                                      int64_t packs) {
  for (int64_t p = grid_index(); p < packs; p += grid_stride()) {
    const auto g = load_pack<T, W>(gate + p * W);
    const auto u = load_pack<T, W>(up + p * W);
    const auto d = load_pack<T, W>(dout + p * W);
    auto dg = load_pack<T, W>(dgate + p * W);
    auto du = load_pack<T, W>(dup + p * W);
#pragma unroll
    for (int k = 0; k < W; ++k) {
      const float gk = to_float(g.v[k]), dk = to_float(d.v[k]);
      dg.v[k] = from_float<T>(to_float(dg.v[k]) + Gate::dgate(dk, to_float(u.v[k]), gk));
      du.v[k] = from_float<T>(to_float(du.v[k]) + Gate::dup(dk, gk));
    }
    store_pack<T, W>(dgate + p * W, dg);
    store_pack<T, W>(dup + p * W, du);
  }
}

template <class T, int W>
__global__ void axpy_kernel(T* y, float a, const T* x, int64_t packs) {
  for (int64_t p = grid_index(); p < packs; p += grid_stride()) {
    const auto xp = load_pack<T, W>(x + p * W);
    auto yp = load_pack<T, W>(y + p * W);
#pragma unroll
    for (int k = 0; k < W; ++k) yp.v[k] = from_float<T>(to_float(yp.v[k]) + a * to_float(xp.v[k]));
    store_pack<T, W>(y + p * W, yp);
  }
}

template <class T, int W>
__global__ void add_kernel(T* out, const T* a, const T* b, int64_t packs) {
  for (int64_t p = grid_index(); p < packs; p += grid_stride()) {
    const auto x = load_pack<T, W>(a + p * W);
    const auto y = load_pack<T, W>(b + p * W);
    Pack<T, W> z;
#pragma unroll
    for (int k = 0; k < W; ++k) z.v[k] = from_float<T>(to_float(x.v[k]) + to_float(y.v[k]));
    store_pack<T, W>(out + p * W, z);
  }
}

// Splits [0, n) into a packed body (only when `aligned`: every pointer is
// 16-byte aligned) and a scalar rest, calling run(width, offset, packs) for
// each non-empty part; width is a std::integral_constant, offset in elements.
template <class T, class Run>
void run_split(int64_t n, bool aligned, Run&& run) {
  constexpr int W = kPackWidth<T>;
  const int64_t body = aligned ? n / W * W : 0;
  if (body > 0) run(std::integral_constant<int, W>{}, int64_t{0}, body / W);
  if (n > body) run(std::integral_constant<int, 1>{}, body, n - body);
}

// Launches kernel_of(width) (the kernel for that pack width) over n
// elements of the pointers p..., each offset to its part; the pointers are
// all the kernel's operands but the last (packs).
template <class T, class KernelOf, class... Ptr>
void launch_packed(const char* name, int64_t n, cudaStream_t s, KernelOf kernel_of, Ptr... p) {
  if (n <= 0) return;
  run_split<T>(n, (is_aligned16(p) && ...), [&](auto w, int64_t off, int64_t packs) {
    kernel_of(w)<<<elementwise_blocks(packs), kElementwiseThreads, 0, s>>>((p + off)..., packs);
    PX_CUDA_LAUNCH(name);
  });
}

// The kernel template K's instance for pack width w (of gate G).
#define PX_KERNEL_OF(K) [](auto w) { return &K<T, decltype(w)::value>; }
#define PX_GATED_OF(K, G) [](auto w) { return &K<G, T, decltype(w)::value>; }

}  // namespace

template <class T>
void gelu_forward(T* out, const T* inp, int64_t n, cudaStream_t s) {
  launch_packed<T>("gelu_forward", n, s, PX_KERNEL_OF(gelu_forward_kernel), out, inp);
}

template <class T>
void gelu_backward(T* dinp, const T* inp, const T* dout, int64_t n, cudaStream_t s) {
  launch_packed<T>("gelu_backward", n, s, PX_KERNEL_OF(gelu_backward_kernel), dinp, inp, dout);
}

template <class T>
void swiglu_forward(T* out, const T* gate, const T* up, int64_t n, cudaStream_t s) {
  launch_packed<T>("swiglu_forward", n, s, PX_GATED_OF(gated_forward_kernel, SiluGate), out, gate,
                   up);
}

template <class T>
void swiglu_backward(T* dgate, T* dup, const T* dout, const T* gate, const T* up, int64_t n,
                     cudaStream_t s) {
  launch_packed<T>("swiglu_backward", n, s, PX_GATED_OF(gated_backward_kernel, SiluGate), dgate,
                   dup, dout, gate, up);
}

template <class T>
void geglu_forward(T* out, const T* gate, const T* up, int64_t n, cudaStream_t s) {
  launch_packed<T>("geglu_forward", n, s, PX_GATED_OF(gated_forward_kernel, GeluGate), out, gate,
                   up);
}

template <class T>
void geglu_backward(T* dgate, T* dup, const T* dout, const T* gate, const T* up, int64_t n,
                    cudaStream_t s) {
  launch_packed<T>("geglu_backward", n, s, PX_GATED_OF(gated_backward_kernel, GeluGate), dgate, dup,
                   dout, gate, up);
}

template <class T>
void add(T* out, const T* a, const T* b, int64_t n, cudaStream_t s) {
  launch_packed<T>("add", n, s, PX_KERNEL_OF(add_kernel), out, a, b);
}

template <class T>
void add_inplace(T* y, const T* x, int64_t n, cudaStream_t s) {
  add<T>(y, y, x, n, s);
}

template <class T>
void axpy(T* y, float a, const T* x, int64_t n, cudaStream_t s) {
  if (n <= 0) return;
  run_split<T>(n, is_aligned16(y) && is_aligned16(x), [&](auto w, int64_t off, int64_t packs) {
    constexpr int W = decltype(w)::value;
    axpy_kernel<T, W>
        <<<elementwise_blocks(packs), kElementwiseThreads, 0, s>>>(y + off, a, x + off, packs);
    PX_CUDA_LAUNCH("axpy");
  });
}

#undef PX_KERNEL_OF
#undef PX_GATED_OF

#define PX_INSTANTIATE(T)                                                                        \
  template void gelu_forward<T>(T*, const T*, int64_t, cudaStream_t);                            \
  template void gelu_backward<T>(T*, const T*, const T*, int64_t, cudaStream_t);                 \
  template void swiglu_forward<T>(T*, const T*, const T*, int64_t, cudaStream_t);                \
  template void swiglu_backward<T>(T*, T*, const T*, const T*, const T*, int64_t, cudaStream_t); \
  template void geglu_forward<T>(T*, const T*, const T*, int64_t, cudaStream_t);                 \
  template void geglu_backward<T>(T*, T*, const T*, const T*, const T*, int64_t, cudaStream_t);  \
  template void add<T>(T*, const T*, const T*, int64_t, cudaStream_t);                           \
  template void add_inplace<T>(T*, const T*, int64_t, cudaStream_t);                             \
  template void axpy<T>(T*, float, const T*, int64_t, cudaStream_t);
PX_INSTANTIATE(float)
PX_INSTANTIATE(__nv_bfloat16)
#undef PX_INSTANTIATE

}  // namespace parallm::cuda
