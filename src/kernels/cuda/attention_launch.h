// Kernel launchers behind cuda::attention_* (attention.h): the host entry in
// attention.cpp checks the arguments and picks a path; these only launch.
// Simt: any D <= kAttnSimtMaxD, fp32 or bf16, document mask. Mma: bf16 with
// D in {64, 128}, no document mask, 16-byte aligned tensors.
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include "kernels/cpu/attention.h"

namespace parallm::cuda::detail {

inline constexpr int kAttnSimtMaxD = 256;

// delta[(b * Hq + h) * Tq + i] = dot(dout, out) of that row, in fp32.
template <class T>
void attention_row_delta(float* delta, const T* dout, const T* out, const cpu::AttnDims& d,
                         cudaStream_t s);

template <class T>
void attention_forward_simt(T* out, float* lse, const T* q, const T* k, const T* v,
                            const cpu::AttnDims& d, float scale, cudaStream_t s);
template <class T>
void attention_backward_simt(T* dq, T* dk, T* dv, const T* dout, const T* q, const T* k, const T* v,
                             const float* lse, const float* delta, const cpu::AttnDims& d,
                             float scale, cudaStream_t s);

void attention_forward_mma(__nv_bfloat16* out, float* lse, const __nv_bfloat16* q,
                           const __nv_bfloat16* k, const __nv_bfloat16* v, const cpu::AttnDims& d,
                           float scale, cudaStream_t s);
void attention_backward_mma(__nv_bfloat16* dq, __nv_bfloat16* dk, __nv_bfloat16* dv,
                            const __nv_bfloat16* dout, const __nv_bfloat16* q,
                            const __nv_bfloat16* k, const __nv_bfloat16* v, const float* lse,
                            const float* delta, const cpu::AttnDims& d, float scale,
                            cudaStream_t s);

}  // namespace parallm::cuda::detail
