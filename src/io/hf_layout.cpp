#include "io/hf_layout.h"

#include "base/error.h"
#include "nn/op_buffers.h"

namespace parallm {

void check_hf_moe(const ModelConfig& c) {
  if (!c.moe.enabled()) return;
  PX_CHECK(c.arch == Arch::LLaMA,
           "an MoE gpt2 model has no Hugging Face class (Mixtral and Qwen2-MoE are the llama "
           "family's)");
  // DeepSeek-V3 has sigmoid scores and the bias (scoring_func sigmoid,
  // e_score_correction_bias), but transformers 4.44 has no class for it.
  PX_CHECK(c.moe.score == ScoreFunction::Softmax,
           "Mixtral's and Qwen2-MoE's routers use softmax scores; this model routes by sigmoid "
           "(--moe-router-score-function sigmoid: DeepSeek-V3's, which transformers 4.44 cannot "
           "load)");
  const int64_t expert = c.moe.expert_intermediate(c.intermediate);
  if (c.hf_model_type() == "qwen2_moe") {
    PX_CHECK(c.head_dim * c.n_heads == c.hidden,
             "Qwen2-MoE's heads are hidden_size / num_attention_heads wide; this model has {} "
             "heads of {} for hidden {}",
             c.n_heads, c.head_dim, c.hidden);
    PX_CHECK(c.moe.shared_intermediate == 0 || c.moe.shared_expert_gate,
             "Qwen2-MoE's shared expert is always gated (--moe-shared-expert-gate); this model's "
             "shared expert of {} features has no gate",
             c.moe.shared_intermediate);
    return;  // every router order is one of norm_topk_prob's two, any layer pattern a rule
  }
  for (int64_t l = 0; l < c.n_layers; ++l)
    PX_CHECK(c.moe.is_moe_layer(l),
             "Mixtral has experts in every layer; layer {} is dense (moe layer frequency {}{})", l,
             c.moe.layer_freq, c.moe.layer_pattern.empty() ? "" : ", a layer pattern");
  PX_CHECK(c.moe.order == RouterOrder::TopkSoftmax || c.moe.renormalize,
           "Mixtral's router renormalises the top-k probabilities; this model uses softmax-topk "
           "without renormalisation");
  PX_CHECK(expert == c.intermediate,
           "Mixtral's experts are intermediate_size ({}) wide; this model's are {} "
           "(--moe-ffn-hidden-size)",
           c.intermediate, expert);
  PX_CHECK(c.moe.shared_intermediate == 0,
           "Mixtral has no shared expert; this model has one of {} features (Qwen2-MoE has "
           "them: a qwen2 family model with experts)",
           c.moe.shared_intermediate);
}

namespace {

// One MoE layer's tensors: Mixtral's block_sparse_moe.{gate, experts.j.w1/w2/w3},
// or Qwen2-MoE's mlp.{gate, experts.j.{gate,up,down}_proj, shared_expert.*,
// shared_expert_gate}. A Qwen2-MoE without a shared expert still has its
// tensors in transformers (zero features, and a gate that multiplies
// nothing): they are named with no parts, so they load as nothing and save
// as zeros.
template <class Add>
void add_moe_layer(const ModelConfig& c, const std::string& h, const std::string& p, Add& add) {
  const int64_t C = c.hidden, E = c.moe.num_experts, I = c.moe.expert_intermediate(c.intermediate);
  const bool qwen = c.hf_model_type() == "qwen2_moe";
  const std::string m = h + (qwen ? "mlp." : "block_sparse_moe."), x = p + "moe.experts.";
  add(m + "gate.weight", {E, C}, {p + "moe.router.weight"}, false, -1);
  for (int64_t j = 0; j < E; ++j) {
    const std::string e = m + "experts." + std::to_string(j) + ".";
    add(e + (qwen ? "gate_proj" : "w1") + ".weight", {I, C}, {x + "gate.weight"}, false, j);
    if (qwen) add(e + "up_proj.weight", {I, C}, {x + "up.weight"}, false, j);
    add(e + (qwen ? "down_proj" : "w2") + ".weight", {C, I}, {x + "down.weight"}, false, j);
    if (!qwen) add(e + "w3.weight", {I, C}, {x + "up.weight"}, false, j);
  }
  // Shared expert: Qwen2-MoE's names (Mixtral has none; check_hf_moe refuses it there).
  const int64_t S = c.moe.shared_intermediate;
  const std::string se = h + "mlp.shared_expert.", q = p + "moe.shared_expert.";
  auto parts = [&](const std::string& name) {
    return S > 0 ? std::vector<std::string>{name} : std::vector<std::string>{};
  };
  if (S > 0 || qwen) {
    add(se + "gate_proj.weight", {S, C}, parts(q + "gate.weight"), false, -1);
    add(se + "up_proj.weight", {S, C}, parts(q + "up.weight"), false, -1);
    add(se + "down_proj.weight", {C, S}, parts(q + "down.weight"), false, -1);
  }
  if (c.moe.shared_expert_gate || qwen)
    add(h + "mlp.shared_expert_gate.weight", {1, C},
        c.moe.shared_expert_gate ? std::vector<std::string>{p + "moe.shared_expert_gate.weight"}
                                 : std::vector<std::string>{},
        false, -1);
}

}  // namespace

std::vector<HfTensor> hf_layout(const ModelConfig& c) {
  std::vector<HfTensor> out;
  auto add = [&](std::string hf, std::vector<int64_t> shape, std::vector<std::string> parts,
                 bool transpose = false, int64_t expert = -1) {
    out.push_back({std::move(hf), std::move(shape), std::move(parts), transpose, expert});
  };
  // A GPT-2's experts have no names here; LLaMA-family ones always do
  // (checkpoints list parameters through this layout), check_hf_moe says
  // whether Hugging Face can load them.
  PX_CHECK(!c.moe.enabled() || c.arch == Arch::LLaMA,
           "an MoE gpt2 model has no Hugging Face layout (Mixtral and Qwen2-MoE are the llama "
           "family's)");
  const int64_t C = c.hidden, I = c.intermediate, V = c.vocab_size;
  if (c.arch == Arch::GPT2) {
    add("transformer.wte.weight", {V, C}, {"embed.weight"});
    add("transformer.wpe.weight", {c.max_positions, C}, {"pos_embed.weight"});
    for (int64_t l = 0; l < c.n_layers; ++l) {
      std::string h = "transformer.h." + std::to_string(l) + ".";
      std::string p = "layers." + std::to_string(l) + ".";
      add(h + "ln_1.weight", {C}, {p + "norm1.weight"});
      add(h + "ln_1.bias", {C}, {p + "norm1.bias"});
      add(h + "attn.c_attn.weight", {C, 3 * C},
          {p + "attn.q.weight", p + "attn.k.weight", p + "attn.v.weight"}, true);
      add(h + "attn.c_attn.bias", {3 * C},
          {p + "attn.q.bias", p + "attn.k.bias", p + "attn.v.bias"});
      add(h + "attn.c_proj.weight", {C, C}, {p + "attn.o.weight"}, true);
      add(h + "attn.c_proj.bias", {C}, {p + "attn.o.bias"});
      add(h + "ln_2.weight", {C}, {p + "norm2.weight"});
      add(h + "ln_2.bias", {C}, {p + "norm2.bias"});
      add(h + "mlp.c_fc.weight", {C, I}, {p + "mlp.fc.weight"}, true);
      add(h + "mlp.c_fc.bias", {I}, {p + "mlp.fc.bias"});
      add(h + "mlp.c_proj.weight", {I, C}, {p + "mlp.proj.weight"}, true);
      add(h + "mlp.c_proj.bias", {C}, {p + "mlp.proj.bias"});
    }
    add("transformer.ln_f.weight", {C}, {"final_norm.weight"});
    add("transformer.ln_f.bias", {C}, {"final_norm.bias"});
  } else {
    const int64_t Q = c.q_dim(), K = c.kv_dim();
    add("model.embed_tokens.weight", {V, C}, {"embed.weight"});
    for (int64_t l = 0; l < c.n_layers; ++l) {
      std::string h = "model.layers." + std::to_string(l) + ".";
      std::string p = "layers." + std::to_string(l) + ".";
      add(h + "input_layernorm.weight", {C}, {p + "norm1.weight"});
      add(h + "self_attn.q_proj.weight", {Q, C}, {p + "attn.q.weight"});
      add(h + "self_attn.k_proj.weight", {K, C}, {p + "attn.k.weight"});
      add(h + "self_attn.v_proj.weight", {K, C}, {p + "attn.v.weight"});
      if (c.qkv_bias) {  // Qwen2 (o_proj has none)
        add(h + "self_attn.q_proj.bias", {Q}, {p + "attn.q.bias"});
        add(h + "self_attn.k_proj.bias", {K}, {p + "attn.k.bias"});
        add(h + "self_attn.v_proj.bias", {K}, {p + "attn.v.bias"});
      }
      add(h + "self_attn.o_proj.weight", {C, Q}, {p + "attn.o.weight"});
      add(h + "post_attention_layernorm.weight", {C}, {p + "norm2.weight"});
      if (c.moe.is_moe_layer(l)) {
        add_moe_layer(c, h, p, add);
        continue;
      }
      add(h + "mlp.gate_proj.weight", {I, C}, {p + "mlp.gate.weight"});
      add(h + "mlp.up_proj.weight", {I, C}, {p + "mlp.up.weight"});
      add(h + "mlp.down_proj.weight", {C, I}, {p + "mlp.down.weight"});
    }
    add("model.norm.weight", {C}, {"final_norm.weight"});
    if (!c.tie_embeddings) add("lm_head.weight", {V, C}, {"lm_head.weight"});
  }
  return out;
}

bool hf_ignorable(const ModelConfig& c, const std::string& name) {
  auto ends_with = [&](const char* s) {
    std::string_view n(name), suf(s);
    return n.size() >= suf.size() && n.substr(n.size() - suf.size()) == suf;
  };
  if (c.arch == Arch::GPT2)
    return ends_with(".attn.bias") || ends_with(".attn.masked_bias") || name == "lm_head.weight";
  return ends_with("rotary_emb.inv_freq") || (c.tie_embeddings && name == "lm_head.weight");
}

std::string hf_canonical_name(const ModelConfig& c, const std::string& name) {
  if (c.arch == Arch::GPT2 && name.rfind("transformer.", 0) != 0 && name != "lm_head.weight")
    return "transformer." + name;
  return name;
}

namespace {

// Visits the concatenation of t.parts in row-major order of the internal
// (untransposed) layout, calling f(part pointer, rows, cols, row offset) on
// host values (a device's through a host copy, written back when `writes`).
template <class F>
void for_each_part(const ParameterSet& ps, const HfTensor& t, bool grads, bool writes, F&& f) {
  int64_t row0 = 0;
  for (const auto& name : t.parts) {
    int i = ps.find(name);
    PX_CHECK(i >= 0, "internal parameter '{}' (for HF tensor '{}') does not exist", name, t.name);
    auto shape = ps.spec(i).shape;
    float* p = grads ? ps.grad({i}) : ps.value({i});
    if (t.expert >= 0) {  // one expert's slice of a stacked (E, rows, cols) tensor
      PX_CHECK(t.expert < shape[0], "HF tensor '{}': expert {} is not held here ({} experts)",
               t.name, t.expert, shape[0]);
      p += t.expert * shape[1] * shape[2];
      shape.erase(shape.begin());
    }
    int64_t rows = shape[0];
    int64_t cols = shape.size() > 1 ? shape[1] : 1;
    const HostView<float> view(ps.stream(), p, rows * cols);
    f(view.get(), rows, cols, row0);
    if (writes) view.write_back();
    row0 += rows;
  }
}

}  // namespace

void gather_hf_tensor(const ParameterSet& ps, const HfTensor& t, bool grads, float* dst) {
  int64_t total_rows = t.transpose ? t.shape[1] : t.shape[0];
  for_each_part(ps, t, grads, false, [&](float* p, int64_t rows, int64_t cols, int64_t row0) {
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t k = 0; k < cols; ++k) {
        float v = p[r * cols + k];
        if (t.transpose)
          dst[k * total_rows + row0 + r] = v;
        else
          dst[(row0 + r) * cols + k] = v;
      }
  });
}

void scatter_hf_tensor(const ParameterSet& ps, const HfTensor& t, const float* src) {
  int64_t total_rows = t.transpose ? t.shape[1] : t.shape[0];
  for_each_part(ps, t, false, true, [&](float* p, int64_t rows, int64_t cols, int64_t row0) {
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t k = 0; k < cols; ++k)
        p[r * cols + k] = t.transpose ? src[k * total_rows + row0 + r] : src[(row0 + r) * cols + k];
  });
}

}  // namespace parallm
