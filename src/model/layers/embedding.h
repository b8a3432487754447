// Input embedding: token table (V, C), plus a learned position table (P, C)
// for GPT-2. The token table may also serve as the tied LM head. Under
// tensor parallelism the token table is vocab-parallel: each rank holds a
// VocabShard of rows, looks up only its ids (others give zeros) and the
// partial embeddings are summed by leaving the tp region (all-reduce, or
// reduce-scatter to this rank's token rows under sequence parallelism).
// Positions are added on the stream's rows, after the sum. Gemma multiplies
// the looked-up rows by sqrt(hidden) rounded to float (as transformers does
// in fp32); a tied LM head reads the table itself, unscaled.
#pragma once
#include "model/config.h"
#include "nn/layer_context.h"
#include "parallel/tensor/tp_group.h"
#include "parallel/tensor/vocab_shard.h"

namespace parallm {

class Embedding {
 public:
  Embedding() = default;
  Embedding(ParameterSet& ps, const ModelConfig& cfg, const TpGroup& tp = {});
  // out (rows, C) = wte[tokens] (+ wpe[positions]) for the stream's rows.
  void forward(const LayerContext& c, float* out, const int32_t* tokens) const;
  void backward(const LayerContext& c, const float* dout, const int32_t* tokens) const;
  ParamRef token_table() const { return wte_; }
  const VocabShard& vocab_shard() const { return shard_; }

 private:
  std::vector<int32_t> stream_positions(const LayerContext& c, int64_t rows) const;
  int64_t C_ = 0, P_ = 0;
  float scale_ = 1.0f;  // sqrt(C) under ModelConfig::scales_embeddings, else 1
  VocabShard shard_;
  ParamRef wte_, wpe_;
  TpGroup tp_;
};

}  // namespace parallm
