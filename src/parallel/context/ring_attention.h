// Ring attention (Liu et al.; Megatron-core / TransformerEngine context
// parallelism): every ring member keeps its queries; the key/value blocks
// travel around the ring, one hop per step, and each member merges the
// partial attention of every block by log-sum-exp (chunk_attention.h). The
// next block's non-blocking send and receive are posted before the current
// block is computed, so the transfer runs under the attention. Backward runs
// the ring again: key/value blocks travel with their dK/dV accumulators,
// which arrive back at their owner after a full turn.
// This lives below model (layer context_parallel, docs/architecture.md)
// because the attention layer calls it from inside its forward/backward,
// exactly as the tensor-parallel linears are called.
#pragma once
#include <vector>

#include "comm/communicator.h"
#include "parallel/context/chunk_attention.h"
#include "tensor/allocator.h"

namespace parallm {

struct RingSpec {
  comm::Communicator* ring = nullptr;  // null: a ring of one (local attention only)
  std::vector<ChunkSet> kv_chunks;     // the key chunks of every ring member, by ring rank
  int size() const { return ring ? ring->size() : 1; }
  int rank() const { return ring ? ring->rank() : 0; }
};

// q: (B, qs.tokens(), Hq, D); k, v: this member's keys (B, kv_chunks[rank].tokens(), Hkv, D).
// out (B, qs.tokens(), Hq, D), lse (B, Hq, qs.tokens()) are written. Buffers
// in flight come from alloc (tag communication).
void ring_attention_forward(const RingSpec& r, Allocator& alloc, float* out, float* lse,
                            const float* q, const ChunkSet& qs, const float* k, const float* v,
                            const ops::AttnDims& base, double scale, AttnWork* work = nullptr);
// dq, dk, dv are written (this member's rows). out, lse: the forward's.
void ring_attention_backward(const RingSpec& r, Allocator& alloc, float* dq, float* dk, float* dv,
                             const float* dout, const float* q, const ChunkSet& qs, const float* k,
                             const float* v, const float* out, const float* lse,
                             const ops::AttnDims& base, double scale);

}  // namespace parallm
