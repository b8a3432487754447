// Multi-head causal self-attention with grouped-query heads and optional
// rotary embeddings, split over tensor parallelism by heads: q, k, v are
// column-parallel (each rank holds n_heads/tp query heads and n_kv_heads/tp
// key/value groups, contiguous, so its query heads use only its groups; with
// fewer groups than ranks, the one group its heads use, replicated) and
// o is row-parallel. q, k and v carry biases for GPT-2 and Qwen2
// (cfg.qkv_bias), o for GPT-2 only; a column-parallel bias is split (and
// replicated) like its output features. The core is the flash-style
// kernel, so only q, k, v, the head outputs and the per-row log-sum-exp are
// saved, never the (B, H, T, T) probabilities. Input and output are residual-stream rows: all
// N = B*T, or N/tp under sequence parallelism (the input is re-gathered in
// backward rather than saved whole). forward_cached is the inference path:
// keys and values go to a paged KV cache (this rank's groups only) and each
// new query attends over its sequence's blocks.
// Context parallelism (CpGroup, docs/context_parallel.md): the layer's rows
// are this cp rank's two load-balanced chunks of the sequence (c.positions
// global), and the core runs through ContextAttention (ring, Ulysses, or
// both) instead of one local kernel call.
#pragma once
#include <string>

#include "model/config.h"
#include "model/layers/rope_frequencies.h"
#include "model/kv_cache/paged_kv_cache.h"
#include "ops/attention.h"
#include "parallel/context/context_attention.h"
#include "parallel/tensor/parallel_linear.h"

namespace parallm {

class Attention {
 public:
  struct Saved {
    Tensor q, k, v;              // (B, T, Hq*D/tp), (B, T, Hkv*D/tp) x2, after rotary
    Tensor att;                  // (B, T, Hq*D/tp), input of the output projection
    Tensor lse;                  // (B, Hq/tp, T)
    ContextAttention::Saved cp;  // under context parallelism: the core's state
  };
  Attention() = default;
  // adapters: where LoRA adapters go (cfg.lora) when ps is a frozen base; null: none.
  Attention(ParameterSet& ps, const std::string& prefix, const ModelConfig& cfg, double proj_std,
            const TpGroup& tp = {}, const CpGroup& cp = {}, ParameterSet* adapters = nullptr);
  // out (rows, C) is written (not accumulated).
  Saved forward(const LayerContext& c, float* out, const float* inp) const;
  // dinp (rows, C) += gradient w.r.t. the layer input.
  void backward(const LayerContext& c, float* dinp, const float* dout, const float* inp,
                const Saved& s) const;
  // Inference (nothing saved): inp (N, C) holds the spans' new tokens back to back, N the
  // sum of counts, c.positions their positions (span s at s.pos0 ..). Writes
  // each span's keys and values into its blocks of `layer`, then attends
  // over everything its sequence has cached (one ragged kernel call). out (N, C).
  void forward_cached(const LayerContext& c, float* out, const float* inp, int64_t layer,
                      PagedKvCache& cache, const std::vector<PagedSpan>& spans) const;

 private:
  ops::AttnDims dims(const LayerContext& c) const;
  // The rotary frequencies of a training / evaluation forward over c.
  std::vector<double> rope_table(const LayerContext& c) const;
  ColumnParallelLinear q_, k_, v_;
  RowParallelLinear o_;
  int64_t n_heads_ = 0, n_kv_heads_ = 0, head_dim_ = 0, C_ = 0;  // heads: this rank's
  double dropout_ = 0.0;                                         // attention dropout probability
  bool rope_ = false;
  RopeFrequencies rope_freq_;  // with rope_
  int64_t window_ = 0;         // sliding window (Mistral); 0: every earlier key
  TpGroup tp_;
  CpGroup cp_;
  ContextAttention cp_core_;
};

// Throws, naming the numbers, when the model's heads, groups or widths do not
// divide by tp (checked before any allocation). Key/value groups may also be
// fewer than tp when they divide it (then replicated, see kv_replicas).
void check_tp_divides(const ModelConfig& cfg, int tp);
// tp ranks that hold each key/value group: tp / n_kv_heads when there are
// fewer groups than ranks, else 1.
int kv_replicas(const ModelConfig& cfg, int tp);

}  // namespace parallm
