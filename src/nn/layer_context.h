// What every layer's forward and backward receive: the allocator to take
// activation/workspace buffers from, the batch geometry, and global token
// positions (so sequence/context shards can rotate and mask by true position).
#pragma once
#include <cstdint>

#include "nn/parameters.h"
#include "nn/precision.h"
#include "nn/recompute.h"
#include "nn/verify_hooks.h"
#include "ops/stream.h"
#include "tensor/tensor.h"

namespace parallm {

class WeightGradQueue;
class MatmulPrecision;  // nn/matmul_precision.h
struct MoeStats;        // model/moe/moe_stats.h
class ExpertBias;       // model/moe/moe_expert_bias.h
struct RowLoras;        // nn/row_lora.h

struct LayerContext {
  Allocator& alloc;
  const ParameterSet& params;
  int64_t B;                 // micro-batch rows
  int64_t T;                 // tokens per row held by this rank
  const int64_t* positions;  // (T) global positions of this rank's tokens
  // Packed documents (nn/packed_docs.h), null when off. doc_start (B,
  // doc_len): where the document holding each position of the full sequence
  // starts (attention stays inside it, --reset-attention-mask). position_ids
  // (B, T): the RoPE / learned position of each of this rank's tokens when
  // positions restart at every document (--reset-position-ids); else a
  // token's position is positions[t] in every row.
  const int64_t* doc_start = nullptr;
  int64_t doc_len = 0;
  const int64_t* position_ids = nullptr;
  // Dropout key of this micro-batch (0: eval, no dropout; a block replaces it
  // by its layer's key) and the global sample number of row 0, so masks
  // depend only on global indices (docs/tensor_parallel.md, "Dropout").
  uint64_t dropout_seed = 0;
  int64_t sample_offset = 0;
  // Non-null: linear layers defer their dW GEMMs here (zero-bubble B/W split).
  WeightGradQueue* weight_grads = nullptr;
  // Mixed precision of the GEMMs (null: fp32) and activation recomputation
  // (docs/mixed_precision.md, docs/recompute.md). saved_tag is the tag of
  // what a forward saves: Workspace in a forward whose saved tensors are
  // dropped at once (full recomputation reruns it in backward).
  MatmulPrecision* matmul = nullptr;
  Recompute recompute = Recompute::None;
  MemTag saved_tag = MemTag::Activation;
  // The training loss's gradient scale (1 / global tokens, times the loss
  // scale), for losses a layer adds itself (MoE balancing losses), and where
  // MoE layers add their statistics during backward (null: not collected).
  double grad_scale = 0.0;
  MoeStats* moe_stats = nullptr;
  // The MoE layers' expert biases (null: none), read by layer c.layer.
  const ExpertBias* expert_bias = nullptr;
  // Under LoRA (docs/lora.md): params is the frozen base (no gradients) and
  // the trained adapters live here (null: no LoRA).
  const ParameterSet* adapters = nullptr;
  // Serving many adapters in one batch (nn/row_lora.h): which rows use which
  // adapter (null: every row is the base model's).
  const RowLoras* row_loras = nullptr;
  // `parallm verify` only (nn/verify_hooks.h): where layers record their
  // outputs (null: off), the global layer a block sets for its ops, and the
  // hooks of a planted bug (null outside verify's tests).
  OpTap* tap = nullptr;
  int layer = -1;
  const FaultHooks* faults = nullptr;
  // Where the layers' ops run (null: the stream of the allocator's device,
  // which has no state of its own on the CPU and the test device).
  const ops::Stream* on = nullptr;
  int64_t N() const { return B * T; }
  const ops::Stream& stream() const {
    return on != nullptr ? *on : ops::Stream::of(alloc);
  }

  Tensor activation(Shape s) const {
    return Tensor::zeros(alloc, std::move(s), DType::F32, saved_tag);
  }
  Tensor workspace(Shape s) const {
    return Tensor::zeros(alloc, std::move(s), DType::F32, MemTag::Workspace);
  }
};

// The context of row-wise layers (norms) on the residual stream's `rows`
// rows: all of c.N(), or a sequence-parallel slice (no positions: row-wise
// layers do not use them).
inline LayerContext stream_context(const LayerContext& c, int64_t rows) {
  if (rows == c.N()) return c;
  LayerContext s = c;  // precision, recompute and dropout keys carry over
  s.B = 1;
  s.T = rows;
  s.positions = nullptr;
  s.position_ids = nullptr;
  return s;
}

// verify's record of this rank's (rows, C) residual-stream rows [row0,
// row0 + rows) of the micro-batch's full_rows tokens (nothing when the tap is off).
void tap_stream(const LayerContext& c, const char* op, TapPass pass, const float* x, int64_t row0,
                int64_t rows, int64_t C, int64_t full_rows);

}  // namespace parallm
