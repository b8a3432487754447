// MoeConfig: the mixture-of-experts part of a model's architecture (docs/moe.md):
// how many experts, which layers carry them (--moe-layer-freq), the router
// (top-k, softmax before or after the top-k, renormalisation; Switch top-1
// and GShard top-2 presets), capacity and dropping, the balancing losses,
// a shared expert, and the routed experts' width when it is not the dense
// MLP's (Qwen2-MoE).
// Router scores: softmax (the orders above) or DeepSeek-V3's sigmoid, with
// optionally the aux-loss-free expert bias (moe_expert_bias.h).
// Capacity is counted per sequence (a row of the micro-batch), in token
// order, so the drop decisions depend on nothing but the sequence: every
// dp / ep / micro-batch layout drops the same tokens. validate() rejects
// impossible values with one message each.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace parallm {

// SoftmaxTopk: p = softmax(logits over all experts), keep the k largest p
// (Switch, GShard, Mixtral with renormalisation). TopkSoftmax: keep the k
// largest logits, softmax over those k (Megatron's default; equal to
// SoftmaxTopk with renormalisation, computed differently).
enum class RouterOrder { SoftmaxTopk, TopkSoftmax };
// Which assignments an expert over capacity keeps: the earliest tokens of
// the sequence (Position) or the highest gates (Probs; ties by position).
enum class DropPolicy { Position, Probs };
// Megatron's --moe-router-score-function. Sigmoid (DeepSeek-V3): s =
// sigmoid(logits), top-k on s (+ the expert bias), gates = the chosen s
// divided by their sum when k > 1 (always, as Megatron; RouterOrder and
// renormalize concern softmax only).
enum class ScoreFunction { Softmax, Sigmoid };

struct MoeConfig {
  int64_t num_experts = 0;  // 0: dense model (every layer an MLP)
  int topk = 2;
  int layer_freq = 1;  // layer l is an MoE layer when l % layer_freq == 0 (Megatron)
  // Megatron's list form of --moe-layer-freq, one entry per layer (1: MoE,
  // 0: dense MLP), e.g. Qwen2-MoE's decoder_sparse_step and mlp_only_layers;
  // when set it decides instead of layer_freq (ModelConfig checks its length).
  std::vector<int> layer_pattern;
  RouterOrder order = RouterOrder::SoftmaxTopk;
  bool renormalize = false;  // SoftmaxTopk: divide the kept k probabilities by their sum
  // Tokens an expert takes per sequence: ceil(T * topk * factor / E);
  // nullopt: dropless (every assignment is computed).
  std::optional<double> capacity_factor;
  DropPolicy drop_policy = DropPolicy::Position;
  double aux_loss_coeff = 0.0;  // Switch load-balancing loss alpha
  double z_loss_coeff = 0.0;    // router z-loss beta
  ScoreFunction score = ScoreFunction::Softmax;
  // Aux-loss-free balancing (DeepSeek-V3; Megatron's
  // --moe-router-enable-expert-bias, sigmoid only): a per-layer bias added to
  // the scores for choosing experts, never to the gates, moved after every
  // step by bias_update_rate * sign(mean load - load_i).
  bool expert_bias = false;
  double bias_update_rate = 1e-3;
  // Group-limited routing (DeepSeek-V3's n_group / topk_group; Megatron's
  // --moe-router-num-groups / --moe-router-group-topk; sigmoid scores): the
  // E experts form num_groups equal groups (a node's experts each), a
  // group's score is the sum of its two best choice scores, and a token's
  // top-k is taken within its group_topk best groups only. 1: no groups.
  int num_groups = 1;
  int group_topk = 1;
  // DeepSeek-V3's routed_scaling_factor (Megatron's
  // --moe-router-topk-scaling-factor; sigmoid scores): the gates times this.
  double topk_scaling_factor = 1.0;
  // Shared expert (Qwen2-MoE, DeepSeek): an always-on MLP of this many
  // features beside the routed experts (0: none), optionally scaled per token
  // by Qwen2-MoE's sigmoid gate (model/moe/moe_shared_expert.h).
  int64_t shared_intermediate = 0;
  bool shared_expert_gate = false;

  // Features of each routed expert (Megatron's --moe-ffn-hidden-size,
  // Qwen2-MoE's moe_intermediate_size); 0: the model's intermediate_size.
  int64_t ffn_hidden_size = 0;
  int64_t expert_intermediate(int64_t model_intermediate) const {
    return ffn_hidden_size > 0 ? ffn_hidden_size : model_intermediate;
  }

  bool enabled() const { return num_experts > 0; }
  // The one query for which layers carry experts.
  bool is_moe_layer(int64_t layer) const;
  // --moe-layer-freq's value: an integer k (layer_freq) or Megatron's list
  // expression ("[1,0,1]", "([1]*3+[0])*2"; moe_layer_freq.h) giving
  // layer_pattern; the other form is cleared.
  void set_layer_freq(const std::string& text);
  // Per-sequence capacity of one expert for sequences of T tokens (dropless: T).
  int64_t capacity(int64_t T) const;
  // Throws, naming the values, on topk outside [1, E], capacity <= 0, ...
  void validate() const;
  // "switch" (top-1, softmax then top-k), "gshard" (top-2, renormalised),
  // "mixtral" (top-2, top-k then softmax): sets topk, order, renormalize.
  void apply_preset(const std::string& name);
};

RouterOrder router_order_from_name(const std::string& s);  // "softmax-topk" | "topk-softmax"
std::string router_order_name(RouterOrder o);
DropPolicy drop_policy_from_name(const std::string& s);        // "position" | "probs"
ScoreFunction score_function_from_name(const std::string& s);  // "softmax" | "sigmoid"
std::string score_function_name(ScoreFunction f);

}  // namespace parallm
