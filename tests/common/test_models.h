// Small model configurations shared by the tests: tiny_* for one-process
// model, io and train tests; tp_* for the tensor-parallel and memory-model
// layout tests (vocabulary 1003, odd, so tp 2 and 4 pad it).
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

// The three decoder shapes the generation tests run: 0 GPT-2, 1 LLaMA,
// 2 LLaMA with a sliding window (5) shorter than the sequences (Mistral);
// weights spread (init_std 0.2) so logits are far apart and greedy
// choices are not near ties. decoder_name names each for test names.
inline ModelConfig decoder_for_generation(int which) {
  ModelConfig c = which > 0 ? tiny_llama() : tiny_gpt2();
  if (which == 2) c.sliding_window = 5;
  c.init_std = 0.2;
  return c;
}
inline const char* decoder_name(int which) {
  return which == 0 ? "gpt2" : which == 1 ? "llama" : "mistral";
}

// 4 heads, hidden 64, tied embeddings.
inline ModelConfig tp_gpt2() {
  ModelConfig c;
  c.vocab_size = 1003;
  c.hidden = 64;
  c.n_layers = 2;
  c.n_heads = c.n_kv_heads = 4;
  c.head_dim = 16;
  c.intermediate = 256;
  c.max_positions = 64;
  return c;
}

// 8 query heads, 4 key/value groups, untied head.
inline ModelConfig tp_llama() {
  ModelConfig c = tp_gpt2();
  c.arch = Arch::LLaMA;
  c.n_heads = 8;
  c.n_kv_heads = 4;
  c.head_dim = 8;
  c.intermediate = 192;
  c.tie_embeddings = false;
  return c;
}

}  // namespace parallm::testing
