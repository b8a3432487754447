// A GGUF file's metadata as a ModelConfig: general.architecture picks the
// family ("gpt2" -> GPT-2; "llama" -> LLaMA; "qwen2" -> Qwen2, LLaMA with
// q/k/v biases), the {arch}.* keys give the sizes (context_length,
// embedding_length, block_count, feed_forward_length, attention.head_count,
// head_count_kv, key_length, layer_norm_epsilon / layer_norm_rms_epsilon,
// rope.freq_base, rope.scaling.*), the token list or token_embd the
// vocabulary, and output.weight's absence a tied head.
// Invariant: what the config cannot express (experts, partial rotary,
// another architecture, YaRN) is refused naming the key and its value.
#pragma once
#include "io/gguf/gguf_file.h"
#include "model/config.h"

namespace parallm {

ModelConfig gguf_model_config(const GgufFile& f);

}  // namespace parallm
