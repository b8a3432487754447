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
// Pipeline parallelism: a ModelStage given at construction keeps only some
// layers (chunks of global layer ranges), the embedding on the first stage
// and the head on the last; the chunk_* calls (transformer_stage.cpp) run
// one chunk for one micro-batch. A last stage with a tied head holds its own
// copy of the token table (same name; ParamSpec::pipeline_copy), whose
// gradient the caller sums with the first stage's (GroupKind::Embedding).
// Expert parallelism: the EpGroup given at construction splits the experts
// of every MoE layer (docs/moe.md); MoE layers need tp == 1 for now.
// Context parallelism: a CpGroup given at construction; every call still
// takes the full (B, T) inputs and targets (targets already shifted), and
// this rank keeps its two load-balanced chunks of each row (cp_chunks.h) at
// their global positions. Losses are this rank's tokens' sums (the caller
// reduces over dp x cp; forward_loss reduces over cp itself).
// Packed documents (set_packed_docs, nn/packed_docs.h): every rank derives
// the document starts from the full (B, T) inputs it is given (on a
// pipeline stage, StageBatch::inputs, so every stage needs them), masks
// attention to the token's document, restarts positions and drops the loss
// after an EOD as asked.
// LoRA (cfg.lora, docs/lora.md): the layers' weights go to a frozen set
// (base_params(): values only, no gradients) and params() holds only the
// adapters, so everything that trains, reduces, shards, clips or checkpoints
// params() sees only what is trained; a unit without adapters (embedding,
// tail) is an empty grad segment.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "model/config.h"
#include "model/contract/model_contract.h"
#include "model/layers/block.h"
#include "model/layers/embedding.h"
#include "model/layers/lm_head.h"
#include "model/moe/moe_expert_bias.h"
#include "model/moe/moe_stats.h"
#include "model/model_stage.h"
#include "model/kv_cache/paged_kv_cache.h"
#include "nn/packed_docs.h"
#include "nn/weight_grad_queue.h"
#include "parallel/context/cp_group.h"
#include "parallel/tensor/partial_grad_sync.h"

namespace parallm {

class Transformer final : public StagedModel {
 public:
  // tp: the tensor-parallel group (default: none). Throws, naming the
  // numbers, when heads, groups or widths do not divide by tp.
  // stage: the layers this process holds (default: all of them).
  // ep: the expert-parallel group (default: every expert here).
  Transformer(const ModelConfig& cfg, Allocator& alloc, const TpGroup& tp = {},
              const ModelStage& stage = {}, const EpGroup& ep = {}, const CpGroup& cp = {});
  ~Transformer() override;
  const ModelConfig& config() const { return cfg_; }
  const ModelStage& stage() const { return stage_; }
  Allocator& allocator() const override { return alloc_; }
  bool whole() const { return stage_.embedding && stage_.head && stage_.chunks.size() == 1; }
  const TpGroup& tp() const override { return tp_; }
  const EpGroup& ep() const override { return ep_; }
  bool has_moe() const { return cfg_.moe.enabled(); }
  // The routing statistics of every training backward since the last call
  // (this rank's tokens; MoeStats), and a fresh start.
  MoeStats take_moe_stats() { return std::exchange(moe_stats_, MoeStats{}); }
  // The MoE layers' aux-loss-free biases (docs/moe.md; empty unless
  // cfg.moe.expert_bias): every layer's, on every rank and stage. The trainer
  // moves them after each step; checkpoints save and restore them.
  const ExpertBias& expert_bias() const { return expert_bias_; }
  ExpertBias& expert_bias() { return expert_bias_; }
  const CpGroup& cp() const { return cp_; }
  // What is trained (the adapters under LoRA, else every parameter).
  ParameterSet& params() override { return params_; }
  const ParameterSet& params() const override { return params_; }
  // The layers' weights: a frozen set under LoRA, else params() itself.
  ParameterSet& base_params() { return cfg_.lora.enabled() ? frozen_ : params_; }
  const ParameterSet& base_params() const { return cfg_.lora.enabled() ? frozen_ : params_; }

  // inputs, targets: (B, T) int32. Gradients accumulate into params().grads.
  // These three need the whole model (no pipeline stage).
  LossSum forward_backward(const int32_t* inputs, const int32_t* targets, int64_t B, int64_t T,
                           double grad_scale, const DropoutKey& dropout = {});
  LossSum forward_loss(const int32_t* inputs, const int32_t* targets, int64_t B, int64_t T);
  // Full logits (B, T, V), for inference and reference tests (gathered over tp).
  Tensor logits(const int32_t* inputs, int64_t B, int64_t T);
  // Inference through a paged KV cache (transformer_cached.cpp): tokens
  // holds the spans' new tokens back to back (sum of counts); span s sits
  // at positions s.pos0 .. and reads its sequence's earlier keys and values
  // from its blocks. Returns the full logits (spans.size(), V) of each
  // span's last token, the same on every tp rank. Whole model, no sequence
  // parallel. The caller tracks what each sequence has cached. loras: the
  // rows' served adapters (nn/row_lora.h; null: the base model for all).
  Tensor forward_cached(const int32_t* tokens, const std::vector<PagedSpan>& spans,
                        PagedKvCache& cache, const RowLoras* loras = nullptr);
  // The same on a pipeline stage (one chunk): the first stage reads tokens,
  // a later one hidden (N, C) from the stage before; returns the hidden
  // (N, C) for the next stage, or on the last stage the logits (S, V).
  Tensor forward_cached_stage(const int32_t* tokens, const float* hidden,
                              const std::vector<PagedSpan>& spans, PagedKvCache& cache,
                              const RowLoras* loras = nullptr);
  // The global layers this process caches (its one chunk, or all).
  LayerRange cached_layers() const;

  // The contract's types under their old names.
  using GradSegment = parallm::GradSegment;
  using UnitPass = parallm::UnitPass;
  // Ranges whose gradients complete together, in the order backward completes
  // them: final norm (+ untied lm_head), blocks L-1..0, then the embedding
  // (last: a tied token table also receives the head's gradient). They tile
  // [0, total_numel) because registration order is embedding, blocks, norm, head.
  const std::vector<GradSegment>& grad_segments() const override { return segments_; }
  // Called with a segment index once that segment's gradients are final for
  // this micro-batch (empty function: no calls).
  void set_grad_ready_hook(std::function<void(int)> hook) override {
    grad_ready_ = std::move(hook);
  }
  // Called with a segment index just before that unit's forward (embedding
  // L+1, blocks L..1, tail 0) and before its backward (0, 1..L, L+1; the
  // tail's backward also runs the fused head, and a tied head reads the
  // embedding's table). forward_loss and logits call only the forward side.
  void set_unit_hook(std::function<void(UnitPass, int)> hook) override {
    unit_hook_ = std::move(hook);
  }
  // Mixed-precision GEMMs (null: fp32; the caller owns it) and activation
  // recomputation for every later forward/backward (docs/mixed_precision.md,
  // docs/recompute.md).
  void set_compute(MatmulPrecision* matmul, Recompute recompute) {
    matmul_ = matmul;
    recompute_ = recompute;
  }
  // Packed documents for every later training / evaluation call (off by
  // default). Throws unless the EOD id is inside the vocabulary.
  void set_packed_docs(const PackedDocs& docs);
  // `parallm verify` (nn/verify_hooks.h): the tap every later layer call
  // records into and the hooks of a planted bug (null: off; the caller
  // owns both).
  void set_verify_hooks(OpTap* tap, const FaultHooks* faults) {
    tap_ = tap;
    faults_ = faults;
  }
  const FaultHooks* fault_hooks() const override { return faults_; }
  // The grad segment (unit) of global layer `layer`, -1 when not held here.
  int block_segment(int layer) const;
  const PackedDocs& packed_docs() const { return docs_; }

  // ---- pipeline stage (transformer_stage.cpp; StagedModel has the contract)
  int num_chunks() const override { return static_cast<int>(stage_.chunks.size()); }
  // Rows of the residual stream a chunk passes on for a (B, T) micro-batch:
  // B*T/cp, divided by tp under sp.
  int64_t stream_rows(int64_t B, int64_t T) const override;
  int64_t stream_width() const override { return cfg_.hidden; }
  // Runs chunk `chunk` forward for micro-batch `micro_batch`, keeping what
  // backward needs. in: (rows, C) activation from the previous virtual stage
  // (ignored by the embedding chunk; kept as the saved input). Returns the
  // (rows, C) output (undefined for the head chunk, whose loss runs in backward).
  Tensor chunk_forward(int chunk, int micro_batch, const StageBatch& b, Tensor in) override;
  // Backward of that forward, given dout (rows, C) from the next virtual
  // stage (ignored by the head chunk). Returns dinp (undefined for the
  // embedding chunk); loss: the head chunk's sum (else zero). With
  // defer_weights the linear dW GEMMs wait for chunk_backward_weights (zero-
  // bubble B), else the saved state is freed here.
  Tensor chunk_backward(int chunk, int micro_batch, const Tensor& dout, bool defer_weights,
                        LossSum* loss) override;
  void chunk_backward_weights(int chunk, int micro_batch) override;  // zero-bubble W
  // Evaluation: the head chunk's loss of a forward already run (no
  // gradients), releasing its state; drop_chunk releases any chunk's state.
  LossSum chunk_loss(int chunk, int micro_batch) override;
  void drop_chunk(int chunk, int micro_batch) override;
  // (micro-batch, chunk) pairs whose forward state is held (0 after a step).
  int chunks_in_flight() const override { return static_cast<int>(inflight_.size()); }

 private:
  struct ChunkState;
  struct Forward {
    std::vector<Tensor>
        xs;  // xs[l]: input of block l; xs[L]: input of the final norm (stream rows)
    std::vector<Block::Saved> blocks;
    Norm::Saved final_norm;
  };
  LayerContext context(int64_t B, int64_t T, const std::vector<int64_t>& pos);
  const ParameterSet* lora_adapters() const { return cfg_.lora.enabled() ? &params_ : nullptr; }
  // This rank's share of a full (B, T) batch: local inputs/targets (empty
  // when given null) and the global positions of its tokens (all of it
  // without context parallelism); under packed documents, the document
  // starts of the full rows and this rank's position ids (empty when off).
  struct LocalBatch {
    std::vector<int32_t> inputs, targets;
    std::vector<int64_t> pos;
    int64_t T = 0;  // local tokens per row
    std::vector<int64_t> doc_start, position_ids;
    int64_t full_T = 0;
    // Points c's document fields at this batch's.
    void attach(LayerContext& c) const;
  };
  // doc_inputs: the full (B, T) inputs the documents are read from (needed
  // under packed documents even where inputs is null).
  LocalBatch local_batch(const int32_t* inputs, const int32_t* targets, int64_t B, int64_t T,
                         const int32_t* doc_inputs = nullptr) const;
  LocalBatch local_batch_plain(const int32_t* inputs, const int32_t* targets, int64_t B,
                               int64_t T) const;
  Forward run_forward(const LayerContext& c, const int32_t* inputs);
  void check_batch(const int32_t* inputs, int64_t B, int64_t T) const;
  // out (N, V) = the head's logits of x (N, C), gathered over tp.
  void full_logits(const LayerContext& c, float* out, const float* x) const;
  // The final norm's output as all N rows (gathered under sequence parallel).
  Tensor head_input(const LayerContext& c, const Forward& f) const;
  Tensor head_input(const LayerContext& c, const Norm::Saved& final_norm) const;
  // Units of the backward order: segment ids of the embedding, of each held
  // block (by index into blocks_), of the tail; -1 when absent.
  int embed_segment_ = -1, tail_segment_ = -1;
  std::vector<int> block_segment_;
  std::vector<int> chunk_first_block_;  // index into blocks_ of each chunk's first block
  void stage_unit_backward(int segment, const std::function<void()>& body);
  // verify's record of a model-level stream tensor (rows, C): the embedding
  // (layer -1) or the final norm (layer n_layers).
  void tap_model_op(const LayerContext& c, const char* op, int layer, const float* x) const;

  ModelConfig cfg_;
  ModelStage stage_;
  Allocator& alloc_;
  TpGroup tp_;
  EpGroup ep_;
  MoeStats moe_stats_;
  ExpertBias expert_bias_;
  CpGroup cp_;
  PartialGradSync partial_grads_;
  ParameterSet params_;
  ParameterSet frozen_;  // the base under LoRA (unused otherwise)
  Embedding embed_;
  std::vector<Block> blocks_;
  Norm final_norm_;
  LmHead head_;
  std::vector<GradSegment> segments_;
  std::function<void(int)> grad_ready_;
  std::function<void(UnitPass, int)> unit_hook_;
  std::map<std::pair<int, int>, std::shared_ptr<ChunkState>> inflight_;  // (micro-batch, chunk)
  MatmulPrecision* matmul_ = nullptr;
  Recompute recompute_ = Recompute::None;
  OpTap* tap_ = nullptr;
  const FaultHooks* faults_ = nullptr;
  PackedDocs docs_;
  void before_unit(UnitPass p, int segment) const {
    if (unit_hook_) unit_hook_(p, segment);
  }
  void grad_ready(int segment) const {
    if (grad_ready_) grad_ready_(segment);
  }
};

}  // namespace parallm
