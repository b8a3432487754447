// [model]: the shape (file only: a flag could not keep the derived sizes
// consistent), dropout, LoRA/QLoRA (docs/lora.md, docs/qlora.md) and MoE
// (docs/moe.md). The run record keeps the model as its Hugging Face
// config.json, so only what that file cannot say (dropout) is recorded here.
#include <algorithm>
#include <cmath>

#include "model/model_catalog.h"
#include "train/config/run_schema.h"

namespace parallm {
namespace {

// An integer that replaces the field only when positive (0: left to convention).
template <class Access>
Setting size_setting(std::string key, std::string help, Access access) {
  return action_setting("model", std::move(key), "", std::move(help), SettingKind::Int,
                        [access](RunConfig& rc, const SettingValue& v) {
                          if (std::get<int64_t>(v) > 0) access(rc) = std::get<int64_t>(v);
                        });
}

// Unset sizes follow the family's convention: kv heads = heads, head_dim =
// hidden / heads, GPT-2's intermediate = 4 x hidden.
void derive_sizes(RunConfig& rc, const GivenKeys& given) {
  auto value = [&](const char* key) {
    auto it = given.find(key);
    return it == given.end() ? int64_t{0} : std::get<int64_t>(it->second);
  };
  const int64_t heads = value("num_heads"), kv = value("num_kv_heads");
  ModelConfig& mc = rc.model;
  if (kv > 0 || heads > 0) mc.n_kv_heads = kv > 0 ? kv : heads;
  if (value("intermediate_size") <= 0 && mc.arch == Arch::GPT2) mc.intermediate = 4 * mc.hidden;
  if (value("head_dim") <= 0) mc.head_dim = mc.hidden / std::max<int64_t>(mc.n_heads, 1);
}

void declare_shape(std::vector<Setting>& m) {
  m.push_back(action_setting("model", "preset", "", "a catalog model the other keys refine",
                             SettingKind::Text, [](RunConfig& rc, const SettingValue& v) {
                               rc.model = catalog_model(std::get<std::string>(v));
                             }));
  m.push_back(named_setting("model", "arch", "", "gpt2 or llama", PX_FIELD(model.arch),
                            arch_from_name, arch_name));
  m.push_back(field_setting("model", "vocab_size", "", "vocabulary size", PX_FIELD(model.vocab_size)));
  m.push_back(field_setting("model", "hidden_size", "", "model width", PX_FIELD(model.hidden)));
  m.push_back(field_setting("model", "num_layers", "", "transformer blocks", PX_FIELD(model.n_layers)));
  m.push_back(size_setting("num_heads", "attention heads", PX_FIELD(model.n_heads)));
  m.push_back(size_setting("num_kv_heads", "key/value heads (default: num_heads)",
                           PX_FIELD(model.n_kv_heads)));
  m.push_back(size_setting("head_dim", "features per head (default: hidden_size / num_heads)",
                           PX_FIELD(model.head_dim)));
  m.push_back(size_setting("intermediate_size", "MLP features (GPT-2's default: 4 x hidden_size)",
                           PX_FIELD(model.intermediate)));
  m.push_back(field_setting("model", "max_positions", "", "longest sequence",
                            PX_FIELD(model.max_positions)));
  m.push_back(field_setting("model", "norm_eps", "", "norm epsilon", PX_FIELD(model.norm_eps)));
  m.push_back(field_setting("model", "rope_theta", "", "RoPE base", PX_FIELD(model.rope_theta)));
  m.push_back(field_setting("model", "family", "",
                            "the LLaMA relative by its Hugging Face model_type (docs/model_families.md)",
                            PX_FIELD(model.hf_type)));
  m.push_back(field_setting("model", "qkv_bias", "", "biases on q, k and v", PX_FIELD(model.qkv_bias)));
  m.push_back(field_setting("model", "sliding_window", "", "keys a query sees (0: all)",
                            PX_FIELD(model.sliding_window)));
  m.push_back(named_setting("model", "rope_scaling", "", "none, linear, dynamic or llama3",
                            PX_FIELD(model.rope_scaling.type), rope_scaling_from_name,
                            rope_scaling_name));
  m.push_back(field_setting("model", "rope_scaling_factor", "", "context extension factor",
                            PX_FIELD(model.rope_scaling.factor)));
  m.push_back(field_setting("model", "rope_scaling_low_freq_factor", "", "llama3 scaling",
                            PX_FIELD(model.rope_scaling.low_freq_factor)));
  m.push_back(field_setting("model", "rope_scaling_high_freq_factor", "", "llama3 scaling",
                            PX_FIELD(model.rope_scaling.high_freq_factor)));
  m.push_back(field_setting("model", "rope_scaling_original_max_positions", "",
                            "llama3 scaling: the pre-training context",
                            PX_FIELD(model.rope_scaling.original_max_positions)));
  m.push_back(field_setting("model", "tie_embeddings", "", "the head shares the embedding",
                            PX_FIELD(model.tie_embeddings)));
  m.push_back(field_setting("model", "init_std", "", "initialisation standard deviation",
                            PX_FIELD(model.init_std)));
}

void declare_lora(std::vector<Setting>& m) {
  m.push_back(field_setting("model", "lora_rank", "--lora-rank",
                            "LoRA rank r: adapters on --lora-targets, base frozen (default: no LoRA)",
                            PX_FIELD(model.lora.rank))
                  .checked(positive));
  m.push_back(field_setting("model", "lora_alpha", "--lora-alpha",
                            "LoRA alpha: scale alpha / r (default 8)", PX_FIELD(model.lora.alpha)));
  m.push_back(field_setting("model", "lora_dropout", "--lora-dropout",
                            "dropout on the adapters' input (default 0)",
                            PX_FIELD(model.lora.dropout)));
  m.push_back(action_setting(
      "model", "lora_targets", "--lora-targets",
      "linears with adapters: q,k,v,o,gate,up,down (LLaMA), q,k,v,o,fc,proj (GPT-2), or "
      "all-linear",
      SettingKind::TextList, [](RunConfig& rc, const SettingValue& v) {
        std::vector<std::string>& targets = rc.model.lora.targets;
        targets.clear();
        for (const std::string& t : std::get<std::vector<std::string>>(v))
          for (const std::string& k : parse_lora_targets(t))
            if (std::ranges::count(targets, k) == 0) targets.push_back(k);
      }));
  m.push_back(field_setting("model", "use_rslora", "--use-rslora",
                            "rank-stabilised LoRA: scale alpha / sqrt(r)", PX_FIELD(model.lora.rslora))
                  .as_switch(true));
  // The names and meanings of `parallm memory --qlora --double-quant`.
  m.push_back(field_setting("model", "qlora", "--qlora",
                            "QLoRA (needs --lora-rank): every block linear's frozen base weight in "
                            "NF4 (4 bits + an fp32 absmax per 64 weights), dequantised tile by tile "
                            "inside its GEMM",
                            PX_FIELD(model.lora.qlora))
                  .as_switch(true));
  m.push_back(field_setting("model", "double_quant", "--double-quant",
                            "with --qlora: absmax quantised to 8 bits in blocks of 256 (4.127 bits "
                            "per weight)",
                            PX_FIELD(model.lora.double_quant))
                  .as_switch(true));
}

void declare_moe(std::vector<Setting>& m) {
  // The preset first, so explicit keys and flags refine it.
  m.push_back(action_setting("model", "moe_router_preset", "--moe-router-preset",
                             "switch (top-1, softmax then top-k), gshard (top-2, renormalised) or "
                             "mixtral (top-k then softmax)",
                             SettingKind::Text, [](RunConfig& rc, const SettingValue& v) {
                               rc.model.moe.apply_preset(std::get<std::string>(v));
                             }));
  m.push_back(field_setting("model", "num_experts", "--num-experts",
                            "experts per MoE layer (0: dense MLPs; docs/moe.md)",
                            PX_FIELD(model.moe.num_experts)));
  m.push_back(field_setting("model", "moe_router_topk", "--moe-router-topk",
                            "experts per token (default 2)", PX_FIELD(model.moe.topk)));
  Setting freq = action_setting(
      "model", "moe_layer_freq", "--moe-layer-freq",
      "k: layer l is an MoE layer when l % k == 0 (default 1: every layer); or one 0/1 per layer "
      "(1: MoE) as a list expression, e.g. [0,1,0,1] or ([1]*3+[0])*2",
      SettingKind::Text, [](RunConfig& rc, const SettingValue& v) {
        MoeConfig& moe = rc.model.moe;
        if (const auto* text = std::get_if<std::string>(&v)) {
          moe.set_layer_freq(*text);
        } else if (const auto* k = std::get_if<int64_t>(&v)) {
          moe.layer_freq = static_cast<int>(*k);
          moe.layer_pattern.clear();
        } else {
          const auto& pattern = std::get<std::vector<int64_t>>(v);
          moe.layer_pattern.assign(pattern.begin(), pattern.end());
        }
      });
  freq.int_or_list = true;
  m.push_back(freq);
  m.push_back(field_setting("model", "moe_ffn_hidden_size", "--moe-ffn-hidden-size",
                            "features of each routed expert (default 0: the model's intermediate "
                            "size)",
                            PX_FIELD(model.moe.ffn_hidden_size)));
  m.push_back(named_setting("model", "moe_router_order", "--moe-router-order",
                            "softmax-topk (default) or topk-softmax", PX_FIELD(model.moe.order),
                            router_order_from_name, nullptr));
  m.push_back(field_setting("model", "moe_renormalize", "--moe-renormalize",
                            "divide the kept top-k probabilities by their sum (softmax-topk)",
                            PX_FIELD(model.moe.renormalize))
                  .as_switch(true));
  m.push_back(action_setting("model", "moe_capacity_factor", "--moe-capacity-factor",
                             "expert capacity per sequence: ceil(T x topk x factor / E) (default: "
                             "dropless)",
                             SettingKind::Float, [](RunConfig& rc, const SettingValue& v) {
                               rc.model.moe.capacity_factor = std::get<double>(v);
                             }));
  m.push_back(named_setting("model", "moe_token_drop_policy", "--moe-token-drop-policy",
                            "which tokens an expert over capacity keeps: position (default) or "
                            "probs",
                            PX_FIELD(model.moe.drop_policy), drop_policy_from_name, nullptr));
  m.push_back(field_setting("model", "moe_aux_loss_coeff", "--moe-aux-loss-coeff",
                            "Switch load-balancing loss coefficient (default 0)",
                            PX_FIELD(model.moe.aux_loss_coeff)));
  m.push_back(field_setting("model", "moe_z_loss_coeff", "--moe-z-loss-coeff",
                            "router z-loss coefficient (default 0)", PX_FIELD(model.moe.z_loss_coeff)));
  m.push_back(field_setting("model", "moe_shared_expert_intermediate_size",
                            "--moe-shared-expert-intermediate-size",
                            "features of an always-on shared expert MLP beside the routed ones (0: "
                            "none)",
                            PX_FIELD(model.moe.shared_intermediate)));
  m.push_back(field_setting("model", "moe_shared_expert_gate", "--moe-shared-expert-gate",
                            "scale the shared expert per token by sigmoid(x . w) (Qwen2-MoE)",
                            PX_FIELD(model.moe.shared_expert_gate))
                  .as_switch(true));
  m.push_back(named_setting("model", "moe_router_score_function", "--moe-router-score-function",
                            "softmax (default) or sigmoid (DeepSeek-V3: top-k of sigmoid(logits), "
                            "gates normalised over the k when k > 1)",
                            PX_FIELD(model.moe.score), score_function_from_name, nullptr));
  m.push_back(field_setting("model", "moe_router_enable_expert_bias",
                            "--moe-router-enable-expert-bias",
                            "aux-loss-free balancing: a per-layer bias on the sigmoid scores for the "
                            "choice only, moved after each step by rate x sign(mean load - load)",
                            PX_FIELD(model.moe.expert_bias))
                  .as_switch(true));
  m.push_back(field_setting("model", "moe_router_bias_update_rate", "--moe-router-bias-update-rate",
                            "the expert bias's step per update (default 1e-3)",
                            PX_FIELD(model.moe.bias_update_rate)));
  m.push_back(field_setting("model", "moe_router_num_groups", "--moe-router-num-groups",
                            "group-limited routing (DeepSeek-V3's n_group, sigmoid scores): the "
                            "experts in this many equal groups (default 1: none)",
                            PX_FIELD(model.moe.num_groups)));
  m.push_back(field_setting("model", "moe_router_group_topk", "--moe-router-group-topk",
                            "the groups a token's top-k is taken from, those of the highest sum "
                            "of their two best scores (DeepSeek-V3's topk_group)",
                            PX_FIELD(model.moe.group_topk)));
  m.push_back(field_setting("model", "moe_router_topk_scaling_factor",
                            "--moe-router-topk-scaling-factor",
                            "the gates times this (DeepSeek-V3's routed_scaling_factor, sigmoid "
                            "scores; default 1)",
                            PX_FIELD(model.moe.topk_scaling_factor)));
}

}  // namespace

void declare_model_settings(RunSchema& s) {
  s.tables.push_back({"model", derive_sizes});
  std::vector<Setting> m;
  declare_shape(m);
  m.push_back(field_setting("model", "attention_dropout", "--attention-dropout",
                            "dropout probability on attention probabilities (default 0)",
                            PX_FIELD(model.attn_dropout)));
  m.push_back(field_setting("model", "hidden_dropout", "--hidden-dropout",
                            "dropout probability on attention and MLP outputs (default 0)",
                            PX_FIELD(model.hidden_dropout)));
  declare_lora(m);
  declare_moe(m);
  // The record keeps the model as its config.json; dropout is what that cannot say.
  for (Setting& x : m)
    x.recorded = x.key == "attention_dropout" || x.key == "hidden_dropout";
  for (Setting& x : m) s.settings.push_back(std::move(x));
}

}  // namespace parallm
