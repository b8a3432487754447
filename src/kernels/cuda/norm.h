// LayerNorm and RMSNorm on the GPU over the last dimension C of N rows, the
// twins of kernels/cpu/norm.h: T in {float, __nv_bfloat16} is storage, math
// and the saved mean/rstd are fp32. Backward accumulates (+=). The weight and
// bias gradients are deterministic: per-chunk partial sums in double (chunks
// fixed by N alone) land in caller-provided scratch, then one ordered pass per
// column adds them up; no atomics anywhere.
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace parallm::cuda {

// out (N, C) = (inp - mean) * rstd * weight + bias (bias may be null);
// saves mean (N) and rstd (N) when non-null.
template <class T>
void layernorm_forward(T* out, float* mean, float* rstd, const T* inp, const T* weight,
                       const T* bias, int64_t N, int64_t C, float eps, cudaStream_t s);
// Scratch bytes layernorm_backward needs for these shapes.
size_t layernorm_backward_scratch_bytes(int64_t N, int64_t C);
// dinp (T) +=, dweight and dbias (fp32) += (each may be null).
template <class T>
void layernorm_backward(T* dinp, float* dweight, float* dbias, const T* dout, const T* inp,
                        const T* weight, const float* mean, const float* rstd, int64_t N, int64_t C,
                        void* scratch, cudaStream_t s);

// out (N, C) = inp * rstd * weight, rstd = 1/sqrt(mean(inp^2) + eps); saves rstd.
// adds_one (Gemma): the gain is (1 + weight) in fp32, as the CPU's adds_one;
// dweight is the same sum either way (d out / d weight does not see the 1).
template <class T>
void rmsnorm_forward(T* out, float* rstd, const T* inp, const T* weight, int64_t N, int64_t C,
                     float eps, cudaStream_t s, bool adds_one = false);
size_t rmsnorm_backward_scratch_bytes(int64_t N, int64_t C);
template <class T>
void rmsnorm_backward(T* dinp, float* dweight, const T* dout, const T* inp, const T* weight,
                      const float* rstd, int64_t N, int64_t C, void* scratch, cudaStream_t s,
                      bool adds_one = false);

}  // namespace parallm::cuda
