// Causal attention forward over a paged KV cache: keys and values live in
// fixed-size blocks of one pool, (num_blocks, block_size, Hkv, D), and each
// sequence names its blocks in a block table (logical block i holds positions
// i*block_size .. (i+1)*block_size-1). One call serves a ragged batch: the
// new query rows of every sequence, concatenated. Softmax is computed online
// over key tiles (flash style), so no (Tq, Tk) matrix exists; per query row
// the result equals cpu::attention_forward with q_pos0 = past, Tk = past + Tq.
// A sliding window (window > 0) hides keys more than window - 1 positions
// before the query, as there; tasks read no block wholly before it (the
// blocks stay allocated: freeing them is the cache owner's business).
// The pools may hold 16-bit keys and values (bf16 or IEEE f16): each is
// widened to f32 as it is read, exactly, and everything after runs as over
// an f32 pool holding the widened values (bit for bit the same result).
#pragma once
#include <cstdint>

#include "kernels/cpu/gemm_bf16.h"

namespace parallm::cpu {

// The pool's geometry and the heads. Query head h reads kv head h / (Hq / Hkv).
struct PagedAttnDims {
  int64_t Hq;
  int64_t Hkv;
  int64_t D;
  int64_t block_size;
  int64_t num_blocks;  // of the pool; every table entry must be in [0, num_blocks)
  int64_t window = 0;  // sliding window: position p sees keys p - window + 1 .. p; 0: all
};

// One sequence of the batch: its Tq query rows sit at positions q_pos0 ..
// q_pos0 + Tq - 1 and see keys 0 (or the window's first) .. their own position, which must already
// be in the pool (write them first with paged_kv_write). `blocks` has n_blocks entries, at least
// ceil((q_pos0 + Tq) / block_size).
struct PagedSeq {
  int64_t Tq;
  int64_t q_pos0;
  const int32_t* blocks;
  int64_t n_blocks;
};

// How a task computes its scores: Direct loops key by key over one tile of
// keys for all of a sequence's heads, tiles spread over the threads and
// merged after (decode, few query rows; no copies), Gemm gathers a key tile
// and calls BLAS (prefill chunks).
// Auto picks by the number of query rows. Both give the same result to
// rounding; tests pin each.
enum class PagedAttnPath { Auto, Direct, Gemm };

// q: (N, Hq, D) with N = sum of Tq, the sequences' rows in order; out: same
// shape; lse: (N, Hq) or null. k_pool, v_pool: (num_blocks, block_size, Hkv, D).
// scale multiplies q.k (normally 1/sqrt(D)).
template <class T>
void paged_attention_forward(T* out, T* lse, const T* q, const T* k_pool, const T* v_pool,
                             const PagedSeq* seqs, int64_t n_seqs, const PagedAttnDims& d,
                             double scale, PagedAttnPath path = PagedAttnPath::Auto);

// Copies n rows of row_elems values (one token's Hkv * D keys or values) from
// src into a pool of num_blocks blocks at positions pos0 .. pos0 + n - 1 of
// the sequence whose block table is `blocks` (n_blocks entries; the entries
// used are checked to be in the pool).
template <class T>
void paged_kv_write(T* pool, int64_t num_blocks, int64_t block_size, int64_t row_elems,
                    const int32_t* blocks, int64_t n_blocks, int64_t pos0, int64_t n, const T* src);

// The same over pools of 16-bit values of type t (bf16 or f16 bits): the
// write rounds src to nearest even (as round_to_lowp), the forward widens
// keys and values to f32 in registers or a tile buffer; scores, softmax,
// out and lse are f32.
void paged_attention_forward(float* out, float* lse, const float* q, const uint16_t* k_pool,
                             const uint16_t* v_pool, LowpType t, const PagedSeq* seqs,
                             int64_t n_seqs, const PagedAttnDims& d, double scale,
                             PagedAttnPath path = PagedAttnPath::Auto);
void paged_kv_write(uint16_t* pool, LowpType t, int64_t num_blocks, int64_t block_size,
                    int64_t row_elems, const int32_t* blocks, int64_t n_blocks, int64_t pos0,
                    int64_t n, const float* src);

}  // namespace parallm::cpu
