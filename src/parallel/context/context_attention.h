// ContextAttention: the core of an attention layer under context
// parallelism, for each --cp-comm: ring (keys/values around the cp ring),
// a2a (Ulysses: all-to-all to head shards, full-sequence attention, back)
// and a2a+ring (USP: all-to-all inside groups of U, ring across them). The
// layer gives it this rank's q, k, v after rotary, as (B, T/cp, H, D) rows
// at the global positions of its two load-balanced chunks (cp_chunks.h),
// and gets the attention output in the same rows.
// Invariant: the result equals causal attention over the whole sequence
// (up to fp32 rounding), whatever the mode.
#pragma once
#include "nn/layer_context.h"
#include "ops/attention.h"
#include "parallel/context/chunk_attention.h"
#include "parallel/context/cp_chunks.h"
#include "parallel/context/cp_group.h"
#include "parallel/context/ring_attention.h"

namespace parallm {

class ContextAttention {
 public:
  // In the core's layout: local rows (ring) or head shards (a2a, hybrid).
  // out is kept under ring only (it is the layer's att); with an all-to-all
  // backward rebuilds it from att (one more all-to-all, no second copy).
  struct Saved {
    Tensor q, k, v, out, lse;
  };
  ContextAttention() = default;
  // heads, kv_heads: this tp rank's; checks they divide by the Ulysses degree.
  ContextAttention(const CpGroup& g, int64_t heads, int64_t kv_heads, int64_t head_dim);

  // base: the one-process dims of the call (B, Hq, Hkv, D, dropout with
  // head0 of this tp rank); c.T is the local length. att: (B, c.T, Hq*D).
  Saved forward(const LayerContext& c, const Tensor& att, const Tensor& q, const Tensor& k,
                const Tensor& v, const ops::AttnDims& base, double scale,
                AttnWork* work = nullptr) const;
  // dq, dk, dv (B, c.T, H*D) are written. att: the forward's output.
  void backward(const LayerContext& c, float* dq, float* dk, float* dv, const float* datt,
                const float* att, const Saved& s, const ops::AttnDims& base, double scale) const;

  // The chunks this rank's core queries (its Ulysses group's tokens) and the
  // ring it runs, for a sequence of T tokens.
  ChunkSet query_chunks(int64_t T) const;
  RingSpec ring(int64_t T) const;

 private:
  ops::AttnDims core_dims(const LayerContext& c, const ops::AttnDims& base) const;
  CpGroup g_;
  int64_t heads_ = 0, kv_heads_ = 0, head_dim_ = 0;
};

}  // namespace parallm
