// Flash attention on the GPU: the same semantics as cpu::attention_forward /
// attention_backward (layouts, GQA head mapping, q_pos0/k_pos0, causal rule,
// document mask; rows with no visible key give out = 0, lse = -inf), with the
// log-sum-exp kept in fp32. bf16 with D in {64, 128} runs on tensor cores
// (mma.sync); other shapes and fp32 run a SIMT kernel with fp32 math.
// The backward is deterministic: every dq / dk / dv row has one owner block.
// Dropout is not supported here (a clear error, never a silent no-op).
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstddef>

#include "kernels/cpu/attention.h"

namespace parallm::cuda {

// q: (B, Tq, Hq, D); k, v: (B, Tk, Hkv, D); out: (B, Tq, Hq, D); lse: (B, Hq, Tq).
// scale multiplies q.k (normally 1/sqrt(D)). d.doc_start, when set, is a
// device pointer.
template <class T>
void attention_forward(T* out, float* lse, const T* q, const T* k, const T* v,
                       const cpu::AttnDims& d, float scale, cudaStream_t s);

// Bytes of device scratch attention_backward needs (the rows' dot(dout, out)).
size_t attention_backward_scratch_bytes(const cpu::AttnDims& d);

// dq, dk, dv accumulate (+=). Needs out and lse from the forward; scratch
// holds attention_backward_scratch_bytes(d) bytes of device memory.
template <class T>
void attention_backward(T* dq, T* dk, T* dv, const T* dout, const T* q, const T* k, const T* v,
                        const T* out, const float* lse, const cpu::AttnDims& d, float scale,
                        void* scratch, cudaStream_t s);

}  // namespace parallm::cuda
