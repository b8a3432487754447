// Exact attention (causal, GQA, document masks, sliding window, dropout)
// forward and backward, the paged-KV form serving uses, and the merge of
// partial results context parallelism runs.
// Kernels: kernels/cpu/attention.h, paged_attention.h, attention_merge.h.
#pragma once
#include <cstdint>

#include "kernels/cpu/attention.h"
#include "kernels/cpu/attention_merge.h"
#include "kernels/cpu/paged_attention.h"
#include "ops/stream.h"

namespace parallm::ops {

using cpu::AttnBwdSplit;
using cpu::AttnDims;  // its doc_start is a buffer of the stream's device
using cpu::PagedAttnDims;
using cpu::PagedAttnPath;
using cpu::PagedSeq;  // its block table is a buffer of the stream's device

// q: (B, Tq, Hq, D); k, v: (B, Tk, Hkv, D); out: (B, Tq, Hq, D); lse: (B, Hq, Tq).
void attention_forward(const Stream& s, float* out, float* lse, const float* q, const float* k,
                       const float* v, const AttnDims& d, double scale);
// dq, dk, dv accumulate; split Auto picks by shape and thread count.
void attention_backward(const Stream& s, float* dq, float* dk, float* dv, const float* dout,
                        const float* q, const float* k, const float* v, const float* out,
                        const float* lse, const AttnDims& d, double scale,
                        AttnBwdSplit split = AttnBwdSplit::Auto);
// The split Auto would pick for d (callers that cut one call into parts
// pass the whole call's choice to each part).
AttnBwdSplit attention_backward_auto_split(const Stream& s, const AttnDims& d);

// Paged attention over a pool of KV blocks; seqs (n_seqs) is host metadata
// whose block tables live on the stream's device.
void paged_attention_forward(const Stream& s, float* out, float* lse, const float* q,
                             const float* k_pool, const float* v_pool, const PagedSeq* seqs,
                             int64_t n_seqs, const PagedAttnDims& d, double scale,
                             PagedAttnPath path = PagedAttnPath::Auto);
// Writes n token rows of src into the pool at positions pos0.. of one sequence.
void paged_kv_write(const Stream& s, float* pool, int64_t num_blocks, int64_t block_size,
                    int64_t row_elems, const int32_t* blocks, int64_t n_blocks, int64_t pos0,
                    int64_t n, const float* src);
// The same over pools of 16-bit values of type t (bf16 or f16 bits):
// written rounded to nearest even, read widened to f32 exactly. CPU kernels
// only (the host and the test device); a GPU stream throws, naming the type.
void paged_attention_forward(const Stream& s, float* out, float* lse, const float* q,
                             const uint16_t* k_pool, const uint16_t* v_pool, cpu::LowpType t,
                             const PagedSeq* seqs, int64_t n_seqs, const PagedAttnDims& d,
                             double scale, PagedAttnPath path = PagedAttnPath::Auto);
void paged_kv_write(const Stream& s, uint16_t* pool, cpu::LowpType t, int64_t num_blocks,
                    int64_t block_size, int64_t row_elems, const int32_t* blocks, int64_t n_blocks,
                    int64_t pos0, int64_t n, const float* src);

// Merges one chunk pair's (part_out, part_lse) into query chunk i of the
// running (out, lse) (kernels/cpu/attention_merge.h has the layouts).
void attention_merge(const Stream& s, float* out, float* lse, const float* part_out,
                     const float* part_lse, int64_t B, int64_t Hq, int64_t D, int64_t nq,
                     int64_t len, int64_t i);

}  // namespace parallm::ops
