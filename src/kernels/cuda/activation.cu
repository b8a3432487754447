// GELU, SwiGLU and adds (activation.h): flat grid-stride maps over 64-bit
// indices, fp32 math on every element whatever the storage type. Each element
// is read and written by exactly one thread, so aliasing out with an input is
// safe.
#include "kernels/cuda/activation.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/gelu.cuh"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/reduce.cuh"

namespace parallm::cuda {
namespace {

__device__ __forceinline__ float sigmoid_fp32(float x) { return 1.f / (1.f + expf(-x)); }

template <class T>
__global__ void gelu_forward_kernel(T* out, const T* inp, int64_t n) {
  for (int64_t i = grid_index(); i < n; i += grid_stride()) {
    out[i] = from_float<T>(gelu_tanh(to_float(inp[i])));
  }
}

template <class T>
__global__ void gelu_backward_kernel(T* dinp, const T* inp, const T* dout, int64_t n) {
  for (int64_t i = grid_index(); i < n; i += grid_stride()) {
    const float grad = gelu_tanh_grad(to_float(inp[i]));
    dinp[i] = from_float<T>(to_float(dinp[i]) + grad * to_float(dout[i]));
  }
}

template <class T>
__global__ void swiglu_forward_kernel(T* out, const T* gate, const T* up, int64_t n) {
  for (int64_t i = grid_index(); i < n; i += grid_stride()) {
    const float g = to_float(gate[i]);
    out[i] = from_float<T>(g * sigmoid_fp32(g) * to_float(up[i]));
  }
}

template <class T>
__global__ void swiglu_backward_kernel(T* dgate, T* dup, const T* dout, const T* gate, const T* up,
                                       int64_t n) {
  for (int64_t i = grid_index(); i < n; i += grid_stride()) {
    const float g = to_float(gate[i]), sg = sigmoid_fp32(g), d = to_float(dout[i]);
    // silu'(g) = sigmoid(g) * (1 + g * (1 - sigmoid(g)))
    dgate[i] =
        from_float<T>(to_float(dgate[i]) + d * to_float(up[i]) * sg * (1.f + g * (1.f - sg)));
    dup[i] = from_float<T>(to_float(dup[i]) + d * g * sg);
  }
}

template <class T>
__global__ void add_kernel(T* out, const T* a, const T* b, int64_t n) {
  for (int64_t i = grid_index(); i < n; i += grid_stride())
    out[i] = from_float<T>(to_float(a[i]) + to_float(b[i]));
}

}  // namespace

template <class T>
void gelu_forward(T* out, const T* inp, int64_t n, cudaStream_t s) {
  if (n <= 0) return;
  gelu_forward_kernel<T><<<elementwise_blocks(n), kElementwiseThreads, 0, s>>>(out, inp, n);
  PX_CUDA_LAUNCH("gelu_forward");
}

template <class T>
void gelu_backward(T* dinp, const T* inp, const T* dout, int64_t n, cudaStream_t s) {
  if (n <= 0) return;
  gelu_backward_kernel<T><<<elementwise_blocks(n), kElementwiseThreads, 0, s>>>(dinp, inp, dout, n);
  PX_CUDA_LAUNCH("gelu_backward");
}

template <class T>
void swiglu_forward(T* out, const T* gate, const T* up, int64_t n, cudaStream_t s) {
  if (n <= 0) return;
  swiglu_forward_kernel<T><<<elementwise_blocks(n), kElementwiseThreads, 0, s>>>(out, gate, up, n);
  PX_CUDA_LAUNCH("swiglu_forward");
}

template <class T>
void swiglu_backward(T* dgate, T* dup, const T* dout, const T* gate, const T* up, int64_t n,
                     cudaStream_t s) {
  if (n <= 0) return;
  swiglu_backward_kernel<T>
      <<<elementwise_blocks(n), kElementwiseThreads, 0, s>>>(dgate, dup, dout, gate, up, n);
  PX_CUDA_LAUNCH("swiglu_backward");
}

template <class T>
void add(T* out, const T* a, const T* b, int64_t n, cudaStream_t s) {
  if (n <= 0) return;
  add_kernel<T><<<elementwise_blocks(n), kElementwiseThreads, 0, s>>>(out, a, b, n);
  PX_CUDA_LAUNCH("add");
}

template <class T>
void add_inplace(T* y, const T* x, int64_t n, cudaStream_t s) {
  add<T>(y, y, x, n, s);
}

#define PX_INSTANTIATE(T)                                                                        \
  template void gelu_forward<T>(T*, const T*, int64_t, cudaStream_t);                            \
  template void gelu_backward<T>(T*, const T*, const T*, int64_t, cudaStream_t);                 \
  template void swiglu_forward<T>(T*, const T*, const T*, int64_t, cudaStream_t);                \
  template void swiglu_backward<T>(T*, T*, const T*, const T*, const T*, int64_t, cudaStream_t); \
  template void add<T>(T*, const T*, const T*, int64_t, cudaStream_t);                           \
  template void add_inplace<T>(T*, const T*, int64_t, cudaStream_t);
PX_INSTANTIATE(float)
PX_INSTANTIATE(__nv_bfloat16)
#undef PX_INSTANTIATE

}  // namespace parallm::cuda
