// Transformer: embedding -> blocks -> final norm -> fused LM head + loss, for
// the GPT-2 and LLaMA families. Owns its ParameterSet. The training entry
// point runs forward and backward for one micro-batch and accumulates
// gradients of grad_scale * (sum of token losses); the caller picks
// grad_scale (1 / global token count) so any layout sums to the same value.
// Backward reports, through an optional hook, each moment a contiguous flat
// range of gradients is complete (grad_segments(), in completion order), so
// data parallelism can start reducing while the rest of backward runs.
// A second hook runs before each unit's forward and before its backward
// (a unit is the parameters of one segment), so ZeRO-3 can gather them.
// Tensor parallelism: the TpGroup given at construction splits every layer
// (docs/tensor_parallel.md); parameters are this rank's shards, the loss is
// the full loss on every tp rank, and under sequence parallelism the
// residual stream between layers holds N/tp token rows.
#pragma once
#include <functional>
#include <vector>

#include "model/config.h"
#include "model/layers/block.h"
#include "model/layers/embedding.h"
#include "model/layers/lm_head.h"
#include "parallel/tensor/partial_grad_sync.h"

namespace parallm {

// Dropout of one training micro-batch: seed (0: no dropout) and the global
// sample number of its first row; masks depend only on these and global
// positions, so every tp / sp / dp layout drops the same elements.
struct DropoutKey {
  uint64_t seed = 0;
  int64_t sample_offset = 0;
};

class Transformer {
 public:
  // tp: the tensor-parallel group (default: none). Throws, naming the
  // numbers, when heads, groups or widths do not divide by tp.
  Transformer(const ModelConfig& cfg, Allocator& alloc, const TpGroup& tp = {});
  const ModelConfig& config() const { return cfg_; }
  const TpGroup& tp() const { return tp_; }
  ParameterSet& params() { return params_; }
  const ParameterSet& params() const { return params_; }

  // inputs, targets: (B, T) int32. Gradients accumulate into params().grads.
  LossSum forward_backward(const int32_t* inputs, const int32_t* targets, int64_t B, int64_t T,
                           double grad_scale, const DropoutKey& dropout = {});
  LossSum forward_loss(const int32_t* inputs, const int32_t* targets, int64_t B, int64_t T);
  // Full logits (B, T, V), for inference and reference tests (gathered over tp).
  Tensor logits(const int32_t* inputs, int64_t B, int64_t T);

  // A flat range [begin, end) of params().flat_grads().
  // Its parameters are [first_param, end_param) of params().
  struct GradSegment {
    int64_t begin = 0, end = 0;
    int first_param = 0, end_param = 0;
  };
  // Ranges whose gradients complete together, in the order backward completes
  // them: final norm (+ untied lm_head), blocks L-1..0, then the embedding
  // (last: a tied token table also receives the head's gradient). They tile
  // [0, total_numel) because registration order is embedding, blocks, norm, head.
  const std::vector<GradSegment>& grad_segments() const { return segments_; }
  // Called with a segment index once that segment's gradients are final for
  // this micro-batch (empty function: no calls).
  void set_grad_ready_hook(std::function<void(int)> hook) { grad_ready_ = std::move(hook); }
  // Called with a segment index just before that unit's forward (embedding
  // L+1, blocks L..1, tail 0) and before its backward (0, 1..L, L+1; the
  // tail's backward also runs the fused head, and a tied head reads the
  // embedding's table). forward_loss and logits call only the forward side.
  enum class UnitPass { Forward, Backward };
  void set_unit_hook(std::function<void(UnitPass, int)> hook) { unit_hook_ = std::move(hook); }
  // Mixed-precision GEMMs (null: fp32; the caller owns it) and activation
  // recomputation for every later forward/backward (docs/mixed_precision.md,
  // docs/recompute.md).
  void set_compute(MatmulPrecision* matmul, Recompute recompute) {
    matmul_ = matmul;
    recompute_ = recompute;
  }

 private:
  struct Forward {
    std::vector<Tensor> xs;  // xs[l]: input of block l; xs[L]: input of the final norm (stream rows)
    std::vector<Block::Saved> blocks;
    Norm::Saved final_norm;
  };
  LayerContext context(int64_t B, int64_t T, const std::vector<int64_t>& pos);
  Forward run_forward(const LayerContext& c, const int32_t* inputs);
  void check_batch(const int32_t* inputs, int64_t B, int64_t T) const;
  // The final norm's output as all N rows (gathered under sequence parallel).
  Tensor head_input(const LayerContext& c, const Forward& f) const;

  ModelConfig cfg_;
  Allocator& alloc_;
  TpGroup tp_;
  PartialGradSync partial_grads_;
  ParameterSet params_;
  Embedding embed_;
  std::vector<Block> blocks_;
  Norm final_norm_;
  LmHead head_;
  std::vector<GradSegment> segments_;
  std::function<void(int)> grad_ready_;
  std::function<void(UnitPass, int)> unit_hook_;
  MatmulPrecision* matmul_ = nullptr;
  Recompute recompute_ = Recompute::None;
  void before_unit(UnitPass p, int segment) const {
    if (unit_hook_) unit_hook_(p, segment);
  }
  void grad_ready(int segment) const {
    if (grad_ready_) grad_ready_(segment);
  }
};

}  // namespace parallm
