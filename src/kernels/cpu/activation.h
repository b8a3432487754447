// Elementwise activations: GELU (tanh approximation, GPT-2's "gelu_new") and
// SwiGLU (silu(gate) * up, LLaMA's MLP). Backward accumulates.
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

// y += x (n elements), and y = a*x + y.
template <class T>
void add_inplace(T* y, const T* x, int64_t n);
template <class T>
void axpy(T* y, T a, const T* x, int64_t n);

}  // namespace parallm::cpu
