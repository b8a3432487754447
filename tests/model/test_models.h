// Small model configurations shared by model, io and train tests.
#pragma once
#include "model/config.h"

namespace parallm::testing {

inline ModelConfig tiny_gpt2() {
  ModelConfig c;
  c.vocab_size = 1000;  // does not divide by common tp sizes on purpose
  c.hidden = 72;
  c.n_layers = 2;
  c.n_heads = c.n_kv_heads = 3;
  c.head_dim = 24;
  c.intermediate = 288;
  c.max_positions = 64;
  return c;
}

inline ModelConfig tiny_llama() {
  ModelConfig c = tiny_gpt2();
  c.arch = Arch::LLaMA;
  c.n_heads = 6;
  c.n_kv_heads = 2;
  c.head_dim = 12;
  c.intermediate = 200;
  c.tie_embeddings = false;
  return c;
}

}  // namespace parallm::testing
