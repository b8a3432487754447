#include "io/hf_config.h"

#include <algorithm>
#include <fstream>
#include <numeric>
#include <utility>
#include <vector>

#include "base/error.h"
#include "io/hf_layout.h"

namespace parallm {

namespace {

std::string hf_architecture(const std::string& type) {
  if (type == "mixtral") return "MixtralForCausalLM";
  if (type == "mistral") return "MistralForCausalLM";
  if (type == "qwen2") return "Qwen2ForCausalLM";
  if (type == "qwen2_moe") return "Qwen2MoeForCausalLM";
  if (type == "gemma") return "GemmaForCausalLM";
  return "LlamaForCausalLM";
}

nlohmann::json rope_scaling_json(const RopeScaling& r) {
  if (r.type == RopeScalingType::None) return nullptr;
  nlohmann::json j = {{"rope_type", rope_scaling_name(r.type)}, {"factor", r.factor}};
  if (r.type == RopeScalingType::Llama3) {
    j["low_freq_factor"] = r.low_freq_factor;
    j["high_freq_factor"] = r.high_freq_factor;
    j["original_max_position_embeddings"] = r.original_max_positions;
  }
  return j;
}

// Qwen2-MoE's layer rule (layer l is sparse when l is not in mlp_only_layers
// and (l + 1) % decoder_sparse_step == 0) for a model's MoE layers: the step
// is the gcd of l + 1 over them, so mlp_only_layers lists the fewest layers.
std::pair<int64_t, std::vector<int64_t>> qwen2_moe_layer_rule(const ModelConfig& c) {
  int64_t step = 0;
  for (int64_t l = 0; l < c.n_layers; ++l)
    if (c.moe.is_moe_layer(l)) step = std::gcd(step, l + 1);
  if (step == 0) step = 1;  // no MoE layer: every layer is listed
  std::vector<int64_t> dense;
  for (int64_t l = 0; l < c.n_layers; ++l)
    if ((l + 1) % step == 0 && !c.moe.is_moe_layer(l)) dense.push_back(l);
  return {step, dense};
}

}  // namespace

nlohmann::json hf_config_json(const ModelConfig& c, const std::string& torch_dtype) {
  nlohmann::json j;
  if (c.arch == Arch::GPT2) {
    j = {{"architectures", {"GPT2LMHeadModel"}},
         {"model_type", "gpt2"},
         {"vocab_size", c.vocab_size},
         {"n_embd", c.hidden},
         {"n_layer", c.n_layers},
         {"n_head", c.n_heads},
         {"n_positions", c.max_positions},
         {"n_ctx", c.max_positions},
         {"n_inner", c.intermediate},
         {"layer_norm_epsilon", c.norm_eps},
         {"activation_function", "gelu_new"},
         {"initializer_range", c.init_std},
         {"tie_word_embeddings", true}};
  } else {
    const std::string type = c.hf_model_type();
    j = {{"architectures", {hf_architecture(type)}},
         {"model_type", type},
         {"vocab_size", c.vocab_size},
         {"hidden_size", c.hidden},
         {"intermediate_size", c.intermediate},
         {"num_hidden_layers", c.n_layers},
         {"num_attention_heads", c.n_heads},
         {"num_key_value_heads", c.n_kv_heads},
         {"head_dim", c.head_dim},
         {"max_position_embeddings", c.max_positions},
         {"rms_norm_eps", c.norm_eps},
         {"rope_theta", c.rope_theta},
         {"hidden_act", c.gated_gelu() ? "gelu_pytorch_tanh" : "silu"},
         {"initializer_range", c.init_std},
         {"tie_word_embeddings", c.tie_embeddings}};
    const nlohmann::json window =
        c.sliding_window > 0 ? nlohmann::json(c.sliding_window) : nlohmann::json(nullptr);
    if (type == "llama") {
      j["rope_scaling"] = rope_scaling_json(c.rope_scaling);
      j["attention_bias"] = false;
      j["mlp_bias"] = false;
    } else if (type == "mixtral") {  // experts in every layer, top-k renormalised, dropless
      j["num_local_experts"] = c.moe.num_experts;
      j["num_experts_per_tok"] = c.moe.topk;
      j["router_aux_loss_coef"] = c.moe.aux_loss_coeff;
      j["output_router_logits"] = false;
      j["sliding_window"] = window;
    } else if (type == "mistral") {
      j["sliding_window"] = window;
    } else if (type == "qwen2") {  // q/k/v biases are implied by the family
      j["use_sliding_window"] = false;
      j["sliding_window"] = nullptr;
      j["max_window_layers"] = c.n_layers;
    } else if (type == "qwen2_moe") {  // Qwen2's attention; docs/moe.md has the MoE mapping
      const auto [step, dense] = qwen2_moe_layer_rule(c);
      j["use_sliding_window"] = false;
      j["sliding_window"] = nullptr;
      j["max_window_layers"] = c.n_layers;
      j["num_experts"] = c.moe.num_experts;
      j["num_experts_per_tok"] = c.moe.topk;
      j["moe_intermediate_size"] = c.moe.expert_intermediate(c.intermediate);
      j["shared_expert_intermediate_size"] = c.moe.shared_intermediate;
      // top-k then softmax equals softmax, top-k, renormalise.
      j["norm_topk_prob"] = c.moe.order == RouterOrder::TopkSoftmax || c.moe.renormalize;
      j["decoder_sparse_step"] = step;
      j["mlp_only_layers"] = dense;
      j["router_aux_loss_coef"] = c.moe.aux_loss_coeff;
      j["output_router_logits"] = false;
    } else if (type == "gemma") {
      j["hidden_activation"] = "gelu_pytorch_tanh";
      j["attention_bias"] = false;
    }
  }
  if (c.moe.enabled()) {
    // Everything about the experts, so checkpoints keep what Mixtral's keys
    // cannot say (router order, capacity, losses, dense layers; an MoE
    // GPT-2). transformers ignores the key.
    const MoeConfig& m = c.moe;
    j["parallm_moe"] = {{"num_experts", m.num_experts},
                        {"topk", m.topk},
                        {"layer_freq", m.layer_freq},
                        {"router_order", router_order_name(m.order)},
                        {"renormalize", m.renormalize},
                        {"capacity_factor", m.capacity_factor ? nlohmann::json(*m.capacity_factor)
                                                              : nlohmann::json(nullptr)},
                        {"drop_policy", m.drop_policy == DropPolicy::Probs ? "probs" : "position"},
                        {"aux_loss_coeff", m.aux_loss_coeff},
                        {"z_loss_coeff", m.z_loss_coeff},
                        {"shared_expert_intermediate_size", m.shared_intermediate},
                        {"shared_expert_gate", m.shared_expert_gate},
                        {"ffn_hidden_size", m.ffn_hidden_size},
                        {"layer_pattern", m.layer_pattern},
                        {"score_function", score_function_name(m.score)},
                        {"expert_bias", m.expert_bias},
                        {"bias_update_rate", m.bias_update_rate},
                        {"num_groups", m.num_groups},
                        {"group_topk", m.group_topk},
                        {"topk_scaling_factor", m.topk_scaling_factor}};
  }
  j["torch_dtype"] = torch_dtype;
  return j;
}

namespace {

class Fields {
 public:
  Fields(const nlohmann::json& j, const std::string& src) : j_(j), src_(src) {}
  template <class T>
  T need(const char* key) const {
    PX_CHECK(j_.contains(key) && !j_[key].is_null(), "{}: missing required field '{}'", src_, key);
    return as<T>(key);
  }
  template <class T>
  T opt(const char* key, T fallback) const {
    return j_.contains(key) && !j_[key].is_null() ? as<T>(key) : fallback;
  }

 private:
  template <class T>
  T as(const char* key) const {
    try {
      return j_[key].get<T>();
    } catch (const nlohmann::json::exception&) {
      PX_FAIL("{}: field '{}' has the wrong type ({})", src_, key, j_[key].dump());
    }
  }
  const nlohmann::json& j_;
  const std::string& src_;
};

// HF's "rope_scaling" of a llama config: null, or {"rope_type" (older files:
// "type"): linear | dynamic | llama3, "factor", llama3's frequency factors}.
RopeScaling rope_scaling_from_json(const nlohmann::json& j, const std::string& src) {
  RopeScaling r;
  if (!j.contains("rope_scaling") || j["rope_scaling"].is_null()) return r;
  const std::string where = src + " rope_scaling";
  PX_CHECK(j["rope_scaling"].is_object(), "{}: expected an object or null, got {}", where,
           j["rope_scaling"].dump());
  Fields f(j["rope_scaling"], where);
  const std::string type = f.opt<std::string>("rope_type", f.opt<std::string>("type", ""));
  if (type == "default") return r;
  try {
    r.type = rope_scaling_from_name(type);
  } catch (const Error& e) {
    PX_FAIL("{}: {}", where, e.what());
  }
  r.factor = f.need<double>("factor");
  if (r.type == RopeScalingType::Llama3) {
    r.low_freq_factor = f.need<double>("low_freq_factor");
    r.high_freq_factor = f.need<double>("high_freq_factor");
    r.original_max_positions = f.need<int64_t>("original_max_position_embeddings");
  }
  return r;
}

// Qwen2MoeConfig's experts (transformers 4.44): softmax over all experts,
// the top k kept, renormalised when norm_topk_prob; experts of
// moe_intermediate_size features; a shared expert of
// shared_expert_intermediate_size (0: none) always gated by a sigmoid; the
// layer rule of decoder_sparse_step and mlp_only_layers as a layer pattern.
void read_qwen2_moe(const Fields& f, const std::string& src, ModelConfig& c) {
  MoeConfig& m = c.moe;
  m.num_experts = f.need<int64_t>("num_experts");
  PX_CHECK(m.num_experts >= 0, "{}: num_experts must be >= 0 (0: dense), got {}", src,
           m.num_experts);
  if (m.num_experts == 0) return;  // every layer is Qwen2's dense MLP
  m.topk = static_cast<int>(f.need<int64_t>("num_experts_per_tok"));
  m.order = RouterOrder::SoftmaxTopk;
  m.renormalize = f.opt<bool>("norm_topk_prob", false);
  m.ffn_hidden_size = f.need<int64_t>("moe_intermediate_size");
  PX_CHECK(m.ffn_hidden_size > 0, "{}: moe_intermediate_size must be positive, got {}", src,
           m.ffn_hidden_size);
  m.shared_intermediate = f.need<int64_t>("shared_expert_intermediate_size");
  PX_CHECK(m.shared_intermediate >= 0,
           "{}: shared_expert_intermediate_size must be >= 0 (0: none), got {}", src,
           m.shared_intermediate);
  m.shared_expert_gate = m.shared_intermediate > 0;
  const int64_t step = f.opt<int64_t>("decoder_sparse_step", 1);
  PX_CHECK(step >= 1, "{}: decoder_sparse_step must be at least 1, got {}", src, step);
  const auto dense = f.opt<std::vector<int64_t>>("mlp_only_layers", {});
  for (int64_t l : dense)
    PX_CHECK(l >= 0 && l < c.n_layers, "{}: mlp_only_layers names layer {} of {} layers", src, l,
             c.n_layers);
  if (step == 1 && dense.empty()) return;  // experts in every layer
  m.layer_pattern.assign(static_cast<size_t>(c.n_layers), 0);
  for (int64_t l = 0; l < c.n_layers; ++l)
    m.layer_pattern[static_cast<size_t>(l)] =
        (l + 1) % step == 0 && std::find(dense.begin(), dense.end(), l) == dense.end();
}

}  // namespace

ModelConfig model_config_from_hf(const nlohmann::json& j, const std::string& src) {
  PX_CHECK(j.is_object(), "{}: config must be a JSON object", src);
  Fields f(j, src);
  std::string type = f.opt<std::string>("model_type", "");
  ModelConfig c;
  if (type == "gpt2") {
    c.arch = Arch::GPT2;
    c.vocab_size = f.need<int64_t>("vocab_size");
    c.hidden = f.need<int64_t>("n_embd");
    c.n_layers = f.need<int64_t>("n_layer");
    c.n_heads = f.need<int64_t>("n_head");
    c.n_kv_heads = c.n_heads;
    c.max_positions = f.need<int64_t>("n_positions");
    c.intermediate = f.opt<int64_t>("n_inner", 4 * c.hidden);
    c.norm_eps = f.opt<double>("layer_norm_epsilon", 1e-5);
    c.tie_embeddings = true;
    std::string act = f.opt<std::string>("activation_function", "gelu_new");
    PX_CHECK(act == "gelu_new" || act == "gelu_pytorch_tanh",
             "{}: activation_function '{}' is not supported (parallm's GPT-2 uses gelu_new)", src,
             act);
    PX_CHECK(c.n_heads > 0, "{}: n_head must be positive, got {}", src, c.n_heads);
    c.head_dim = c.hidden / c.n_heads;
  } else if (type == "llama" || type == "mistral" || type == "mixtral" || type == "qwen2" ||
             type == "gemma" || type == "qwen2_moe") {
    c.arch = Arch::LLaMA;
    c.hf_type = type;
    c.vocab_size = f.need<int64_t>("vocab_size");
    c.hidden = f.need<int64_t>("hidden_size");
    c.intermediate = f.need<int64_t>("intermediate_size");
    c.n_layers = f.need<int64_t>("num_hidden_layers");
    c.n_heads = f.need<int64_t>("num_attention_heads");
    PX_CHECK(c.n_heads > 0, "{}: num_attention_heads must be positive, got {}", src, c.n_heads);
    c.n_kv_heads = f.opt<int64_t>("num_key_value_heads", c.n_heads);
    c.head_dim = f.opt<int64_t>("head_dim", type == "gemma" ? 256 : c.hidden / c.n_heads);
    c.max_positions = f.opt<int64_t>("max_position_embeddings", 2048);
    c.norm_eps = f.opt<double>("rms_norm_eps", 1e-6);
    c.rope_theta = f.opt<double>("rope_theta", 10000.0);
    c.tie_embeddings = f.opt<bool>("tie_word_embeddings", type == "gemma");
    if (type == "gemma") {
      // transformers 4.44 ignores hidden_act for Gemma and uses
      // hidden_activation, tanh-GELU when unset.
      std::string act = f.opt<std::string>("hidden_activation", "gelu_pytorch_tanh");
      PX_CHECK(act == "gelu_pytorch_tanh",
               "{}: hidden_activation '{}' is not supported (Gemma uses gelu_pytorch_tanh)", src,
               act);
    } else {
      std::string act = f.opt<std::string>("hidden_act", "silu");
      PX_CHECK(act == "silu", "{}: hidden_act '{}' is not supported ({} uses silu)", src, act,
               type);
    }
    if (type == "llama") {
      c.rope_scaling = rope_scaling_from_json(j, src);
    } else {
      PX_CHECK(!j.contains("rope_scaling") || j["rope_scaling"].is_null(),
               "{}: rope_scaling {} is not supported for {}", src, j["rope_scaling"].dump(), type);
    }
    PX_CHECK(!f.opt<bool>("attention_bias", false) && !f.opt<bool>("mlp_bias", false),
             "{}: attention_bias / mlp_bias (biases on every projection) are not supported for {}",
             src, type);
    c.qkv_bias = type == "qwen2" || type == "qwen2_moe";
    if (c.qkv_bias) {
      PX_CHECK(!f.opt<bool>("use_sliding_window", false),
               "{}: {}'s use_sliding_window is not supported", src, type);
    } else if (type == "mistral" || type == "mixtral") {
      c.sliding_window = f.opt<int64_t>("sliding_window", 0);
      PX_CHECK(c.sliding_window >= 0, "{}: sliding_window must be >= 0 or null, got {}", src,
               c.sliding_window);
    }
    if (type == "mixtral") {  // every layer MoE; softmax, top-k, renormalise (docs/moe.md)
      c.moe.num_experts = f.need<int64_t>("num_local_experts");
      c.moe.topk = static_cast<int>(f.need<int64_t>("num_experts_per_tok"));
      c.moe.order = RouterOrder::TopkSoftmax;
    }
    if (type == "qwen2_moe") read_qwen2_moe(f, src, c);
  } else {
    PX_FAIL(
        "{}: model_type '{}' is not supported (expected gpt2, llama, mistral, mixtral, qwen2, "
        "qwen2_moe or gemma)",
        src, type);
  }
  c.init_std = f.opt<double>("initializer_range", 0.02);
  if (j.contains("parallm_moe") && j["parallm_moe"].is_object()) {  // written by parallm
    const std::string where = src + " parallm_moe";
    Fields m(j["parallm_moe"], where);
    c.moe.num_experts = m.need<int64_t>("num_experts");
    c.moe.topk = static_cast<int>(m.need<int64_t>("topk"));
    c.moe.layer_freq = static_cast<int>(m.opt<int64_t>("layer_freq", 1));
    c.moe.order = router_order_from_name(m.opt<std::string>("router_order", "softmax-topk"));
    c.moe.renormalize = m.opt<bool>("renormalize", false);
    const auto& cf = j["parallm_moe"]["capacity_factor"];
    if (cf.is_number()) c.moe.capacity_factor = cf.get<double>();
    c.moe.drop_policy = drop_policy_from_name(m.opt<std::string>("drop_policy", "position"));
    c.moe.aux_loss_coeff = m.opt<double>("aux_loss_coeff", 0.0);
    c.moe.z_loss_coeff = m.opt<double>("z_loss_coeff", 0.0);
    c.moe.shared_intermediate = m.opt<int64_t>("shared_expert_intermediate_size", 0);
    c.moe.shared_expert_gate = m.opt<bool>("shared_expert_gate", false);
    c.moe.ffn_hidden_size = m.opt<int64_t>("ffn_hidden_size", 0);
    c.moe.layer_pattern = m.opt<std::vector<int>>("layer_pattern", {});
    c.moe.score = score_function_from_name(m.opt<std::string>("score_function", "softmax"));
    c.moe.expert_bias = m.opt<bool>("expert_bias", false);
    c.moe.bias_update_rate = m.opt<double>("bias_update_rate", 1e-3);
    c.moe.num_groups = static_cast<int>(m.opt<int64_t>("num_groups", 1));
    c.moe.group_topk = static_cast<int>(m.opt<int64_t>("group_topk", 1));
    c.moe.topk_scaling_factor = m.opt<double>("topk_scaling_factor", 1.0);
  }
  try {
    c.validate();
  } catch (const Error& e) {
    PX_FAIL("{}: {}", src, e.what());
  }
  return c;
}

ModelConfig read_hf_config(const std::string& path) {
  std::ifstream in(path);
  PX_CHECK(in.good(), "cannot read '{}'", path);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    PX_FAIL("{}: malformed JSON: {}", path, e.what());
  }
  return model_config_from_hf(j, path);
}

}  // namespace parallm
