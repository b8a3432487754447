// Paged attention on the GPU: the semantics of cpu::paged_attention_forward
// and cpu::paged_kv_write (kernels/cpu/paged_attention.h: pool layout, block
// tables, causal rule, sliding window, GQA head mapping, lse), fp32 only.
// The sequences' metadata is host memory, their block tables device memory;
// the host checks everything it can see, and the kernels never read or write
// outside the pool: a table entry outside [0, num_blocks), which only the
// device sees, is skipped (its key hidden, its row not written).
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/cpu/paged_attention.h"

namespace parallm::cuda {

// Largest head dim paged_attention_forward takes.
inline constexpr int64_t kPagedAttnMaxD = 256;

// q: (N, Hq, D) with N = sum of the sequences' Tq, their rows in order; out:
// same shape; lse: (N, Hq) or null (then not written). k_pool, v_pool:
// (num_blocks, block_size, Hkv, D). seqs: n_seqs HOST records whose `blocks`
// point at DEVICE int32 block tables. scale multiplies q.k. A row whose every
// key is skipped (bad table) gets out = 0, lse = -inf, as the CPU's guard.
// Asynchronous on s; seqs may be freed when the call returns.
void paged_attention_forward(float* out, float* lse, const float* q, const float* k_pool,
                             const float* v_pool, const cpu::PagedSeq* seqs, int64_t n_seqs,
                             const cpu::PagedAttnDims& d, double scale, cudaStream_t s);

// Copies n rows of row_elems values from src into the pool at positions
// pos0 .. pos0 + n - 1 of the sequence whose DEVICE block table is `blocks`
// (n_blocks entries). Asynchronous on s.
void paged_kv_write(float* pool, int64_t num_blocks, int64_t block_size, int64_t row_elems,
                    const int32_t* blocks, int64_t n_blocks, int64_t pos0, int64_t n,
                    const float* src, cudaStream_t s);

}  // namespace parallm::cuda
