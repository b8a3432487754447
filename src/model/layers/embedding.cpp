#include "model/layers/embedding.h"

#include "kernels/cpu/embedding.h"

namespace parallm {

Embedding::Embedding(ParameterSet& ps, const ModelConfig& cfg)
    : V_(cfg.vocab_size), C_(cfg.hidden), P_(cfg.max_positions) {
  wte_ = ps.add({.name = "embed.weight", .shape = {V_, C_}, .init_std = cfg.init_std});
  if (cfg.uses_learned_positions())
    wpe_ = ps.add({.name = "pos_embed.weight", .shape = {P_, C_}, .init_std = cfg.init_std / 2});
}

std::vector<int32_t> Embedding::positions_as_tokens(const LayerContext& c) const {
  std::vector<int32_t> pos(static_cast<size_t>(c.N()));
  for (int64_t b = 0; b < c.B; ++b)
    for (int64_t t = 0; t < c.T; ++t) {
      PX_CHECK(c.positions[t] < P_, "position {} is beyond max_positions ({})", c.positions[t], P_);
      pos[static_cast<size_t>(b * c.T + t)] = static_cast<int32_t>(c.positions[t]);
    }
  return pos;
}

void Embedding::forward(const LayerContext& c, float* out, const int32_t* tokens) const {
  cpu::embedding_forward(out, tokens, c.params.value(wte_), c.N(), C_, 0, V_, false);
  if (wpe_.index >= 0) {
    auto pos = positions_as_tokens(c);
    cpu::embedding_forward(out, pos.data(), c.params.value(wpe_), c.N(), C_, 0, P_, true);
  }
}

void Embedding::backward(const LayerContext& c, const float* dout, const int32_t* tokens) const {
  cpu::embedding_backward(c.params.grad(wte_), tokens, dout, c.N(), C_, 0, V_);
  if (wpe_.index >= 0) {
    auto pos = positions_as_tokens(c);
    cpu::embedding_backward(c.params.grad(wpe_), pos.data(), dout, c.N(), C_, 0, P_);
  }
}

}  // namespace parallm
