// Element-wise activations and adds on the GPU, the twins of
// kernels/cpu/activation.h: GELU (tanh form), SwiGLU (silu(gate) * up),
// GeGLU (gelu(gate) * up) and vector adds. T in {float, __nv_bfloat16} is
// storage; math is fp32. Backward kernels accumulate (+=) into their outputs.
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>

namespace parallm::cuda {

template <class T>
void gelu_forward(T* out, const T* inp, int64_t n, cudaStream_t s);
// dinp += gelu'(inp) * dout
template <class T>
void gelu_backward(T* dinp, const T* inp, const T* dout, int64_t n, cudaStream_t s);

// out = silu(gate) * up, silu(x) = x * sigmoid(x).
template <class T>
void swiglu_forward(T* out, const T* gate, const T* up, int64_t n, cudaStream_t s);
// dgate += dout * up * silu'(gate), dup += dout * silu(gate).
template <class T>
void swiglu_backward(T* dgate, T* dup, const T* dout, const T* gate, const T* up, int64_t n,
                     cudaStream_t s);

// out = gelu(gate) * up with the tanh GELU above (Gemma's MLP).
template <class T>
void geglu_forward(T* out, const T* gate, const T* up, int64_t n, cudaStream_t s);
// dgate += dout * up * gelu'(gate), dup += dout * gelu(gate).
template <class T>
void geglu_backward(T* dgate, T* dup, const T* dout, const T* gate, const T* up, int64_t n,
                    cudaStream_t s);

// out = a + b (out may alias a or b).
template <class T>
void add(T* out, const T* a, const T* b, int64_t n, cudaStream_t s);
// y += x
template <class T>
void add_inplace(T* y, const T* x, int64_t n, cudaStream_t s);
// y += a * x
template <class T>
void axpy(T* y, float a, const T* x, int64_t n, cudaStream_t s);

}  // namespace parallm::cuda
