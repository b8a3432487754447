// A model out as a GGUF v3 file that llama.cpp and parallm's reader load:
// the inverse of gguf_config / gguf_weights / gguf_tokenizer. Metadata under
// llama.cpp's keys ({arch}.block_count ...); tensors under its names
// (gguf_tensor_name), each stored (out, in): GPT-2's Conv1D weights
// transposed, llama's attn_q / attn_k rows permuted to GGML's interleaved
// rotary order (qwen2's not); a tied head has no output.weight. With a
// preset, the 2-D weights quant_recipe names are written as its blocks
// (ops::quantize_blocks), everything else f32. The tokenizer: a byte-level
// BPE tokenizer.json as tokenizer.ggml.* (model gpt2, pre gpt-2 or
// llama-bpe), the vocabulary padded with [PADn] to the model's rows.
// Invariant: everything is checked and built in memory before the file is
// written, and the file appears whole or not at all (GgufWriter).
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "model/transformer.h"

namespace parallm {

struct GgufExportTokenizer {
  std::string dir;  // holds tokenizer.json; "" writes no tokenizer
  std::optional<int32_t> bos, eos;
  bool add_bos = false;
  std::string chat_template;  // "" none
};

struct GgufExportReport {
  int64_t tensors = 0, quantized = 0, bytes = 0;
};

// model: one process, the whole model, f32 values. quantize: "" (f32) or a
// quant_preset_from_name name.
GgufExportReport export_gguf(const Transformer& model, const GgufExportTokenizer& tok,
                             const std::string& quantize, const std::string& name,
                             const std::string& path);

}  // namespace parallm
