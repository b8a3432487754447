// Elementwise activations: GELU (tanh approximation, GPT-2's "gelu_new"),
// SwiGLU (silu(gate) * up, LLaMA's MLP) and GeGLU (gelu(gate) * up, Gemma's
// MLP, the same tanh GELU). Backward accumulates.
#pragma once
#include <cstdint>

namespace parallm::cpu {

template <class T>
void gelu_forward(T* out, const T* inp, int64_t n);
template <class T>
void gelu_backward(T* dinp, const T* inp, const T* dout, int64_t n);

// out = silu(gate) * up, silu(x) = x * sigmoid(x).
template <class T>
void swiglu_forward(T* out, const T* gate, const T* up, int64_t n);
template <class T>
void swiglu_backward(T* dgate, T* dup, const T* dout, const T* gate, const T* up, int64_t n);

// out = gelu(gate) * up with the tanh GELU above (transformers' gelu_pytorch_tanh).
template <class T>
void geglu_forward(T* out, const T* gate, const T* up, int64_t n);
template <class T>
void geglu_backward(T* dgate, T* dup, const T* dout, const T* gate, const T* up, int64_t n);

// y += x (n elements), and y = a*x + y.
template <class T>
void add_inplace(T* y, const T* x, int64_t n);
template <class T>
void axpy(T* y, T a, const T* x, int64_t n);

}  // namespace parallm::cpu
