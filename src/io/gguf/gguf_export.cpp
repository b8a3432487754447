// A model out as GGUF (see gguf_export.h).
#include "io/gguf/gguf_export.h"

#include <nlohmann/json.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "base/error.h"
#include "io/gguf/gguf_weights.h"
#include "io/gguf/gguf_writer.h"
#include "io/gguf/quant_recipe.h"
#include "io/hf_layout.h"

namespace parallm {

namespace {
using Json = nlohmann::json;
constexpr int32_t kNormal = 1, kControl = 3, kUserDefined = 4, kUnused = 5;
// gguf_tokenizer.cpp's Llama 3 split, as tokenizer.json writes it.
const char* kLlama3Regex =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

std::string arch_key(const ModelConfig& c) {
  PX_CHECK(c.moe.num_experts == 0, "export --gguf: mixture-of-experts models are not supported");
  if (c.arch == Arch::GPT2) return "gpt2";
  PX_CHECK(c.hf_type.empty() || c.hf_type == "llama" || c.hf_type == "qwen2",
           "export --gguf: model type '{}' is not supported (gpt2, llama, qwen2)", c.hf_type);
  PX_CHECK(c.sliding_window == 0, "export --gguf: a sliding window is not supported");
  PX_CHECK(c.rope_scaling.type == RopeScalingType::None ||
               c.rope_scaling.type == RopeScalingType::Linear,
           "export --gguf: rope scaling '{}' is not supported (none, linear)",
           rope_scaling_name(c.rope_scaling.type));
  return c.hf_type == "qwen2" ? "qwen2" : "llama";
}

void add_config(GgufWriter& w, const ModelConfig& c, const std::string& arch) {
  const std::string a = arch + ".";
  auto u32 = [](int64_t v) { return static_cast<uint32_t>(v); };
  w.add_u32(a + "context_length", u32(c.max_positions));
  w.add_u32(a + "embedding_length", u32(c.hidden));
  w.add_u32(a + "block_count", u32(c.n_layers));
  w.add_u32(a + "feed_forward_length", u32(c.intermediate));
  w.add_u32(a + "attention.head_count", u32(c.n_heads));
  w.add_u32(a + "attention.head_count_kv", u32(c.n_kv_heads));
  if (c.arch == Arch::GPT2) {
    w.add_f32(a + "attention.layer_norm_epsilon", static_cast<float>(c.norm_eps));
    return;
  }
  w.add_f32(a + "attention.layer_norm_rms_epsilon", static_cast<float>(c.norm_eps));
  w.add_f32(a + "rope.freq_base", static_cast<float>(c.rope_theta));
  w.add_u32(a + "rope.dimension_count", u32(c.head_dim));
  w.add_u32(a + "attention.key_length", u32(c.head_dim));
  w.add_u32(a + "attention.value_length", u32(c.head_dim));
  w.add_u32(a + "vocab_size", u32(c.vocab_size));
  if (c.rope_scaling.type == RopeScalingType::Linear) {
    w.add_string(a + "rope.scaling.type", "linear");
    w.add_f32(a + "rope.scaling.factor", static_cast<float>(c.rope_scaling.factor));
  }
}

void add_tokenizer(GgufWriter& w, const GgufExportTokenizer& t, int64_t vocab) {
  const std::filesystem::path p = std::filesystem::path(t.dir) / "tokenizer.json";
  std::ifstream f(p);
  PX_CHECK(f.good(), "export --gguf: cannot read {}", p.string());
  const Json j = Json::parse(f, nullptr, false);
  PX_CHECK(!j.is_discarded() && j.contains("model"), "export --gguf: {} is not a tokenizer.json",
           p.string());
  const Json& m = j["model"];
  const Json& pre = j.contains("pre_tokenizer") ? j["pre_tokenizer"] : Json();
  std::string pre_name;
  if (pre.is_object() && pre.value("type", "") == "ByteLevel" && pre.value("use_regex", true)) {
    pre_name = "gpt-2";
  } else if (pre.is_object() && pre.value("type", "") == "Sequence" &&
             pre["pretokenizers"].size() == 2 && pre["pretokenizers"][0].value("type", "") == "Split" &&
             pre["pretokenizers"][0]["pattern"].value("Regex", "") == kLlama3Regex &&
             pre["pretokenizers"][1].value("type", "") == "ByteLevel") {
    pre_name = "llama-bpe";
  }
  PX_CHECK(m.value("type", "") == "BPE" && !pre_name.empty(),
           "export --gguf: {}: only byte-level BPE tokenizers (GPT-2's or Llama 3's split) are "
           "exported; give a model whose tokenizer is one",
           p.string());
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  auto put = [&](int64_t id, const std::string& s, int32_t type) {
    PX_CHECK(id >= 0 && id < vocab, "export --gguf: token '{}' has id {}, outside the model's {} "
             "rows", s, id, vocab);
    if (static_cast<int64_t>(tokens.size()) <= id) {
      tokens.resize(static_cast<size_t>(id) + 1);
      types.resize(static_cast<size_t>(id) + 1, kUnused);
    }
    tokens[static_cast<size_t>(id)] = s;
    types[static_cast<size_t>(id)] = type;
  };
  for (const auto& [s, id] : m["vocab"].items()) put(id.get<int64_t>(), s, kNormal);
  if (j.contains("added_tokens"))
    for (const Json& a : j["added_tokens"])
      put(a["id"].get<int64_t>(), a["content"].get<std::string>(),
          a.value("special", false) ? kControl : kUserDefined);
  for (int64_t i = 0; i < vocab; ++i) {  // llama.cpp's converter pads so
    if (i >= static_cast<int64_t>(tokens.size())) {
      tokens.push_back("");
      types.push_back(kUnused);
    }
    if (types[static_cast<size_t>(i)] == kUnused) tokens[static_cast<size_t>(i)] = "[PAD" + std::to_string(i) + "]";
  }
  std::vector<std::string> merges;
  for (const Json& mg : m["merges"])
    merges.push_back(mg.is_string() ? mg.get<std::string>()
                                    : mg[0].get<std::string>() + " " + mg[1].get<std::string>());
  w.add_string("tokenizer.ggml.model", "gpt2");
  w.add_string("tokenizer.ggml.pre", pre_name);
  w.add_strings("tokenizer.ggml.tokens", tokens);
  w.add_i32s("tokenizer.ggml.token_type", types);
  w.add_strings("tokenizer.ggml.merges", merges);
  if (t.bos) w.add_u32("tokenizer.ggml.bos_token_id", static_cast<uint32_t>(*t.bos));
  if (t.eos) w.add_u32("tokenizer.ggml.eos_token_id", static_cast<uint32_t>(*t.eos));
  w.add_bool("tokenizer.ggml.add_bos_token", t.add_bos);
  w.add_bool("tokenizer.ggml.add_eos_token", false);
  if (!t.chat_template.empty()) w.add_string("tokenizer.chat_template", t.chat_template);
}

std::vector<uint8_t> f32_bytes(const std::vector<float>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(float));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}
}  // namespace

GgufExportReport export_gguf(const Transformer& model, const GgufExportTokenizer& tok,
                             const std::string& quantize, const std::string& name,
                             const std::string& path) {
  const ModelConfig& c = model.config();
  const std::string arch = arch_key(c);
  PX_CHECK(!c.lora.enabled(), "export --gguf: merge the LoRA adapters first (export --merge-lora)");
  const bool quant = !quantize.empty();
  const QuantPreset preset = quant ? quant_preset_from_name(quantize) : QuantPreset::Q8_0;
  GgufWriter w;
  w.add_string("general.architecture", arch);
  w.add_string("general.name", name);
  add_config(w, c, arch);
  // llama.cpp's file types: ALL_F32 0, MOSTLY_Q8_0 7, MOSTLY_Q4_0 2, MOSTLY_Q4_K_M 15.
  w.add_u32("general.file_type",
            !quant ? 0 : preset == QuantPreset::Q8_0 ? 7 : preset == QuantPreset::Q4_0 ? 2 : 15);
  if (quant) w.add_u32("general.quantization_version", 2);
  if (!tok.dir.empty()) add_tokenizer(w, tok, c.vocab_size);

  const ParameterSet& ps = model.base_params();
  GgufExportReport r;
  for (const HfTensor& t : hf_layout(c)) {
    const std::string g = gguf_tensor_name(c, t.name);
    PX_CHECK(!g.empty() && t.expert < 0, "export --gguf: no GGUF name for '{}'", t.name);
    int64_t numel = 1;
    for (int64_t d : t.shape) numel *= d;
    std::vector<float> hf(static_cast<size_t>(numel)), v;
    gather_hf_tensor(ps, t, false, hf.data());
    std::vector<int64_t> shape = t.shape;
    if (t.transpose) {  // HF (in, out) -> GGUF (out, in)
      const int64_t R = shape[0], C = shape[1];
      v.resize(hf.size());
      for (int64_t i = 0; i < R; ++i)
        for (int64_t k = 0; k < C; ++k) v[static_cast<size_t>(k * R + i)] = hf[static_cast<size_t>(i * C + k)];
      shape = {C, R};
    } else {
      v = std::move(hf);
    }
    // llama.cpp's permute: HF row h*D + i*D/2 + j goes to row h*D + 2j + i.
    const bool q = g.find(".attn_q.") != std::string::npos, k = g.find(".attn_k.") != std::string::npos;
    if (arch == "llama" && (q || k)) {
      const int64_t heads = q ? c.n_heads : c.n_kv_heads, D = shape[0] / heads, half = D / 2;
      const int64_t cols = shape.size() == 2 ? shape[1] : 1;
      std::vector<float> p(v.size());
      for (int64_t row = 0; row < shape[0]; ++row) {
        const int64_t h = row / D, rr = row % D;
        const int64_t dst = h * D + 2 * (rr % half) + rr / half;
        std::memcpy(&p[static_cast<size_t>(dst * cols)], &v[static_cast<size_t>(row * cols)],
                    static_cast<size_t>(cols) * sizeof(float));
      }
      v = std::move(p);
    }
    std::optional<ops::QuantType> type;
    if (quant && shape.size() == 2)
      type = recipe_type(preset, {.name = t.parts.back(),
                                   .cols = shape[1],
                                   .n_layers = static_cast<int>(c.n_layers),
                                   .fused_qkv = t.parts.size() > 1,
                                   .head = t.parts.back() == "lm_head.weight" ||
                                           (c.tie_embeddings && t.parts.back() == "embed.weight")});
    ++r.tensors;
    if (!type) {
      r.bytes += numel * 4;
      w.add_tensor(g, shape, kGgmlF32, f32_bytes(v));
      continue;
    }
    const ops::QuantTraits& qt = ops::quant_traits(*type);
    std::vector<uint8_t> b(static_cast<size_t>(numel / qt.block_elems * qt.block_bytes));
    ops::quantize_blocks(*type, v.data(), numel, b.data());
    ++r.quantized;
    r.bytes += static_cast<int64_t>(b.size());
    w.add_tensor(g, shape, qt.ggml_type, std::move(b));
  }
  w.write(path);
  return r;
}

}  // namespace parallm
