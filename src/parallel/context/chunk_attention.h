// Attention between sets of sequence chunks, the local step of ring and
// Ulysses attention: queries (B, nq*len, Hq, D) made of nq chunks of len
// tokens, keys/values (B, nk*len, Hkv, D) of nk chunks, each chunk at its
// own global positions. Every (query chunk, key chunk) pair is one flash
// kernel call with its q_pos0 / k_pos0; a pair whose keys all lie in the
// queries' future, or (packed documents, base.doc_start over the whole
// sequence) before every query's document, or (base.window) before every
// query's sliding window, is skipped. Partial outputs are merged by log-sum-exp,
// so calling forward once per key block in any order gives full attention. Backward takes the
// merged output and lse (the kernel's Di and P use them), so the gradient of each key block is
// exact on its own. `progress` runs after every pair and between the kernel's query blocks
// (AttnDims::progress): the ring polls its transfers there, because MPI moves a large
// non-blocking message only while some MPI call runs on this rank. Every buffer is one of
// stream st's device; the tiles come from `a` (on the host stream: plain host memory).
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "ops/attention.h"

namespace parallm {

// Chunks laid back to back: chunk i holds positions pos0[i] .. pos0[i] + len.
struct ChunkSet {
  std::vector<int64_t> pos0;
  int64_t len = 0;
  int64_t tokens() const { return static_cast<int64_t>(pos0.size()) * len; }
};

// Work of the chunk attention calls, counted: causal (query, key) pairs
// computed, summed over batch rows and query heads (forward; backward
// visits the same pairs).
struct AttnWork {
  int64_t pairs = 0;
};

// base: B, Hq, Hkv, D, doc_start, window and dropout (head0, sample0, key); Tq, Tk, positions
// and causal are set per pair. out (B, nq*len, Hq, D) and lse (B, Hq,
// nq*len) hold the running merge; start from out = 0, lse = -inf
// (chunk_attention_init).
void chunk_attention_init(const ops::Stream& st, float* out, float* lse, int64_t B, int64_t tokens,
                          int64_t Hq, int64_t D);
void chunk_attention_forward(const ops::Stream& st, Allocator& a, float* out, float* lse,
                             const float* q, const ChunkSet& qs, const float* k, const float* v,
                             const ChunkSet& ks, const ops::AttnDims& base, double scale,
                             AttnWork* work = nullptr, const std::function<void()>& progress = {});
// A part of one backward call: key chunks [first, last) of the ChunkSet,
// batch entries [b0, b1), kv heads [g0, g1) with their query heads (an end
// < 0: to the end). Parts that tile the whole call give it exactly, bit for
// bit: each (batch entry, kv head)'s sums do not depend on the others.
struct AttnPart {
  int64_t first = 0, last = -1;
  int64_t b0 = 0, b1 = -1;
  int64_t g0 = 0, g1 = -1;
};

// dq (queries' layout) and dk, dv (keys' layout) accumulate (+=). out, lse:
// the fully merged forward results of these queries. Only `part` is visited
// (ring backward sends its last block home piece by piece).
void chunk_attention_backward(const ops::Stream& st, Allocator& a, float* dq, float* dk, float* dv,
                              const float* dout, const float* q, const ChunkSet& qs, const float* k,
                              const float* v, const ChunkSet& ks, const float* out,
                              const float* lse, const ops::AttnDims& base, double scale,
                              const std::function<void()>& progress = {}, AttnPart part = {});

}  // namespace parallm
