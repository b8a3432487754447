// A GGUF file's tensors into a Transformer's parameters. The map is
// hf_layout's (hf_layout.h) under llama.cpp's names (token_embd,
// position_embd, blk.N.{attn_norm, attn_q/k/v, attn_qkv, attn_output,
// ffn_norm, ffn_gate/up/down}, output_norm, output): a GGUF tensor is
// stored (out, in), ne reversed, so HF's transposed GPT-2 Conv1D weights
// arrive untransposed; llama's attn_q / attn_k rows are un-permuted from
// GGML's interleaved rotary order back to HF's rotate-half order.
// F32 / F16 / BF16 tensors, and quantised ones that are not linear weights
// (embeddings, a tied head), become f32 values; quantised linear weights
// (Q8_0, Q4_0, Q4_K, Q6_K) become QuantWeights of this rank's tp slice
// (set_quant) and their f32 values are dropped.
// Invariant: every tensor's name, shape and type, and every slice's block
// alignment, are checked before the first byte is copied.
#pragma once
#include "io/gguf/gguf_file.h"
#include "model/transformer.h"

namespace parallm {

// GGUF name of an HF tensor name of cfg's family ("" for none).
std::string gguf_tensor_name(const ModelConfig& cfg, const std::string& hf_name);

// Loads f into model (each rank its stage's tensors and tp slices). When any
// linear weight is quantised, model.base_params() must be frozen.
void load_gguf_weights(const GgufFile& f, Transformer& model);

}  // namespace parallm
