// GGUF metadata -> ModelConfig (see gguf_config.h). Keys as llama.cpp's
// converter writes them (gguf-py constants.Keys.LLM / Attention / Rope).
#include "io/gguf/gguf_config.h"

#include "base/error.h"

namespace parallm {

namespace {

// The vocabulary: tokenizer.ggml.tokens' length, else token_embd's rows.
int64_t gguf_vocab_size(const GgufFile& f) {
  if (const nlohmann::json* toks = f.opt_array("tokenizer.ggml.tokens", GgufValueType::STRING))
    return static_cast<int64_t>(toks->size());
  const GgufTensorInfo* e = f.find_tensor("token_embd.weight");
  PX_CHECK(e != nullptr && e->ne.size() == 2,
           "{}: neither tokenizer.ggml.tokens nor a 2-D token_embd.weight gives the vocabulary",
           f.path());
  return e->ne[1];
}

}  // namespace

ModelConfig gguf_model_config(const GgufFile& f) {
  const std::string arch = f.need_string("general.architecture");
  const std::string a = arch + ".";
  ModelConfig c;
  if (arch == "gpt2") {
    c.arch = Arch::GPT2;
  } else if (arch == "llama" || arch == "qwen2") {
    c.arch = Arch::LLaMA;
    c.hf_type = arch;
    c.qkv_bias = arch == "qwen2";
  } else {
    PX_FAIL("{}: general.architecture '{}' is not supported (parallm reads gpt2, llama and qwen2 "
            "GGUF files)",
            f.path(), arch);
  }
  c.n_layers = f.need_int(a + "block_count");
  c.hidden = f.need_int(a + "embedding_length");
  c.intermediate = f.need_int(a + "feed_forward_length");
  c.max_positions = f.need_int(a + "context_length");
  c.n_heads = f.need_int(a + "attention.head_count");
  PX_CHECK(c.n_heads > 0, "{}: {}attention.head_count must be positive, got {}", f.path(), a,
           c.n_heads);
  c.n_kv_heads = f.opt_int(a + "attention.head_count_kv").value_or(c.n_heads);
  c.vocab_size = gguf_vocab_size(f);
  if (const auto n = f.opt_int(a + "expert_count"); n && *n > 0)
    PX_FAIL("{}: {}expert_count is {}: mixture-of-experts GGUF files are not supported", f.path(),
            a, *n);
  c.init_std = 0.02;
  if (c.arch == Arch::GPT2) {
    PX_CHECK(c.n_kv_heads == c.n_heads, "{}: gpt2 with {}attention.head_count_kv {} != head_count "
             "{} is not supported", f.path(), a, c.n_kv_heads, c.n_heads);
    c.head_dim = c.hidden / c.n_heads;
    c.norm_eps = f.opt_float(a + "attention.layer_norm_epsilon").value_or(1e-5);
    c.tie_embeddings = true;
  } else {
    c.head_dim = f.opt_int(a + "attention.key_length").value_or(c.hidden / c.n_heads);
    const int64_t vlen = f.opt_int(a + "attention.value_length").value_or(c.head_dim);
    PX_CHECK(vlen == c.head_dim, "{}: {}attention.value_length {} differs from key_length {}: not "
             "supported", f.path(), a, vlen, c.head_dim);
    const int64_t rot = f.opt_int(a + "rope.dimension_count").value_or(c.head_dim);
    PX_CHECK(rot == c.head_dim, "{}: {}rope.dimension_count is {} but heads are {} wide: partial "
             "rotary embeddings are not supported", f.path(), a, rot, c.head_dim);
    c.norm_eps = f.opt_float(a + "attention.layer_norm_rms_epsilon").value_or(1e-6);
    c.rope_theta = f.opt_float(a + "rope.freq_base").value_or(10000.0);
    c.tie_embeddings = f.find_tensor("output.weight") == nullptr;
    const std::string scaling = f.opt_string(a + "rope.scaling.type").value_or("none");
    if (scaling == "linear") {
      c.rope_scaling.type = RopeScalingType::Linear;
      c.rope_scaling.factor = f.need_float(a + "rope.scaling.factor");
    } else {
      PX_CHECK(scaling == "none", "{}: {}rope.scaling.type '{}' is not supported (none or linear)",
               f.path(), a, scaling);
    }
    PX_CHECK(f.find_tensor("rope_freqs.weight") == nullptr,
             "{}: tensor 'rope_freqs.weight' (per-frequency rope factors, Llama 3's rope scaling) "
             "is not supported",
             f.path());
    PX_CHECK(c.arch != Arch::LLaMA || arch != "qwen2" || c.rope_scaling.type ==
             RopeScalingType::None, "{}: rope scaling is not supported for qwen2", f.path());
  }
  try {
    c.validate();
  } catch (const Error& e) {
    PX_FAIL("{}: {}", f.path(), e.what());
  }
  return c;
}

}  // namespace parallm
