// Input embedding: token table (V, C), plus a learned position table (P, C)
// for GPT-2. The token table may also serve as the tied LM head.
#pragma once
#include "model/config.h"
#include "model/layers/layer_context.h"

namespace parallm {

class Embedding {
 public:
  Embedding() = default;
  Embedding(ParameterSet& ps, const ModelConfig& cfg);
  // out (N, C) = wte[tokens] (+ wpe[positions]).
  void forward(const LayerContext& c, float* out, const int32_t* tokens) const;
  void backward(const LayerContext& c, const float* dout, const int32_t* tokens) const;
  ParamRef token_table() const { return wte_; }

 private:
  std::vector<int32_t> positions_as_tokens(const LayerContext& c) const;
  int64_t V_ = 0, C_ = 0, P_ = 0;
  ParamRef wte_, wpe_;
};

}  // namespace parallm
