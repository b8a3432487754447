// MoE settings in a run file ([model] moe_* keys, [parallelism] ep) and the
// bad inputs each caught before allocation with one clear message: topk
// larger than the experts, ep not dividing the experts, capacity <= 0,
// the parameter server with ep, experts split over tp; tp (+ sp) and
// ZeRO-1/2/3 accepted;
// the layer pattern (a list moe_layer_freq, --moe-layer-freq text) and the
// experts' own width; DeepSeek-V3's group-limited routing keys, kept by a
// checkpoint's config.json.
#include <gtest/gtest.h>

#include "base/error.h"
#include "common/run_config_file.h"
#include "common/test_util.h"
#include "io/hf_config.h"
#include "train/config/train_config.h"

namespace parallm {
namespace {

const char* kBase = R"(
[model]
arch = "llama"
vocab_size = 1000
hidden_size = 64
num_layers = 2
num_heads = 4
num_experts = 4
moe_router_preset = "switch"
moe_layer_freq = 2
moe_capacity_factor = 1.5
moe_token_drop_policy = "probs"
moe_aux_loss_coeff = 0.01
moe_z_loss_coeff = 0.001
[data]
train = ["a.bin"]
[training]
micro_batch_size = 2
global_batch_size = 24
[parallelism]
dp = 4
ep = 2
)";

// The message validate() gives the run file with `edit` applied to its text.
std::string error_after(const std::string& from, const std::string& to, int world = 4) {
  std::string body = kBase;
  body.replace(body.find(from), from.size(), to);
  try {
    const RunConfig rc = load_run_config(testing::write_toml(body));
    rc.train.validate(rc.model, world);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(MoeRunConfig, ReadsTheMoeKeys) {
  const RunConfig rc = load_run_config(testing::write_toml(kBase));
  const MoeConfig& m = rc.model.moe;
  EXPECT_EQ(m.num_experts, 4);
  EXPECT_EQ(m.topk, 1);  // the switch preset
  EXPECT_EQ(m.layer_freq, 2);
  EXPECT_TRUE(m.is_moe_layer(0));
  EXPECT_FALSE(m.is_moe_layer(1));
  ASSERT_TRUE(m.capacity_factor.has_value());
  EXPECT_EQ(*m.capacity_factor, 1.5);
  EXPECT_EQ(m.drop_policy, DropPolicy::Probs);
  EXPECT_EQ(m.aux_loss_coeff, 0.01);
  EXPECT_EQ(rc.train.parallelism.ep, 2);
  EXPECT_NO_THROW(rc.train.validate(rc.model, 4));
  EXPECT_EQ(m.shared_intermediate, 0);
  std::string body = kBase;
  const std::string z = "moe_z_loss_coeff = 0.001\n";
  body.insert(body.find(z) + z.size(),
              "moe_shared_expert_intermediate_size = 32\nmoe_shared_expert_gate = true\n");
  const RunConfig shared = load_run_config(testing::write_toml(body));
  EXPECT_EQ(shared.model.moe.shared_intermediate, 32);
  EXPECT_TRUE(shared.model.moe.shared_expert_gate);
}

TEST(MoeRunConfig, BadInputOneClearMessageEach) {
  EXPECT_EQ(error_after("moe_router_preset = \"switch\"", "moe_router_topk = 5"),
            "moe router topk (5) must be between 1 and num_experts (4)");
  EXPECT_EQ(error_after("num_experts = 4", "num_experts = 3"),
            "num_experts (3) is not divisible by ep (2)");
  EXPECT_EQ(error_after("moe_capacity_factor = 1.5", "moe_capacity_factor = 0.0"),
            "moe capacity factor must be positive, got 0 (leave it unset for dropless)");
  EXPECT_EQ(error_after("moe_capacity_factor = 1.5", "moe_capacity_factor = -2.0"),
            "moe capacity factor must be positive, got -2 (leave it unset for dropless)");
  EXPECT_EQ(error_after("num_experts = 4", "num_experts = 0"),
            "expert parallelism (--ep 2) needs an MoE model (--num-experts)");
  // MoE runs under cp (docs/moe.md); ep folds dp x cp, as the grid does.
  EXPECT_EQ(error_after("ep = 2", "cp = 2", 8), "(no error)");
  EXPECT_EQ(error_after("dp = 4\nep = 2", "dp = 1\ncp = 2\nep = 2", 2), "(no error)");
  EXPECT_EQ(error_after("dp = 4\nep = 2", "dp = 1\ncp = 2\nep = 4", 2),
            "expert parallel size (--ep 4) must divide data parallel size (--dp 1) x context "
            "parallel size (--cp 2) = 2");
  EXPECT_EQ(error_after("ep = 2", "ep = 2\ndp_mode = \"ps\""),
            "expert parallelism (--ep 2) does not run with the parameter server (--dp-mode ps): "
            "use --dp-mode allreduce (DDP or ZeRO-1/2/3)");
  EXPECT_EQ(error_after("ep = 2", "ep = 2\nzero = 3"), "(no error)");
  // Expert tp: 1 or tp (docs/moe.md).
  EXPECT_EQ(error_after("ep = 2", "ep = 2\ntp = 2\nexpert_tp = 2", 8), "(no error)");
  EXPECT_EQ(error_after("ep = 2", "ep = 2\ntp = 4\nexpert_tp = 2", 16),
            "--expert-tp 2: experts split over tensor-parallel ranks are built for --expert-tp 1 "
            "(experts whole on every tp rank) or --expert-tp equal to --tp (4) only");
}

// Megatron's list form of moe_layer_freq (one 0/1 per layer) and the routed
// experts' own width, in a run file and as --moe-layer-freq's text.
TEST(MoeRunConfig, LayerPatternAndExpertWidth) {
  std::string body = kBase;
  body.replace(body.find("moe_layer_freq = 2"), 18,
               "moe_layer_freq = [0, 1]\nmoe_ffn_hidden_size = 96");
  const RunConfig rc = load_run_config(testing::write_toml(body));
  const MoeConfig& m = rc.model.moe;
  EXPECT_EQ(m.layer_pattern, (std::vector<int>{0, 1}));
  EXPECT_FALSE(m.is_moe_layer(0));
  EXPECT_TRUE(m.is_moe_layer(1));
  EXPECT_EQ(m.expert_intermediate(rc.model.intermediate), 96);
  EXPECT_NO_THROW(rc.train.validate(rc.model, 4));
  EXPECT_EQ(error_after("moe_layer_freq = 2", "moe_layer_freq = [1, 0, 1]"),
            "the moe layer pattern has 3 entries for 2 layers");
  EXPECT_EQ(error_after("moe_layer_freq = 2", "moe_layer_freq = [1, 2]"),
            "moe layer pattern entries must be 0 (dense) or 1 (MoE); layer 1 has 2");
  EXPECT_EQ(error_after("moe_layer_freq = 2", "moe_ffn_hidden_size = -8"),
            "moe expert ffn hidden size must be positive (or 0: the model's intermediate size), "
            "got -8");

  MoeConfig flag;
  flag.set_layer_freq(" [1, 0,1] ");
  EXPECT_EQ(flag.layer_pattern, (std::vector<int>{1, 0, 1}));
  flag.set_layer_freq("3");  // the integer form clears the list
  EXPECT_EQ(flag.layer_freq, 3);
  EXPECT_TRUE(flag.layer_pattern.empty());
  // Megatron's list expressions (tests/model/moe_layer_freq_test.cpp has the rest).
  flag.set_layer_freq("([1]*1+[0])*2");
  EXPECT_EQ(flag.layer_pattern, (std::vector<int>{1, 0, 1, 0}));
  EXPECT_EQ(testing::error_of([&] { flag.set_layer_freq("[10]"); }),
            "moe layer frequency '[10]': entries must be 0 (dense) or 1 (MoE); layer 0 has 10");
  EXPECT_EQ(testing::error_of([&] { flag.set_layer_freq("2x"); }),
            "moe layer frequency '2x' is neither an integer nor a list like [1,0,1,0] or "
            "([1]*3+[0])*2");
}

TEST(MoeRunConfig, TensorParallelAndZero1Accepted) {
  // Experts whole on every tp rank (expert tp 1), with and without sp; ZeRO-1
  // and ZeRO-2 shard expert state (and gradients) over expert-dp.
  for (const char* extra : {"tp = 2\nsequence_parallel = true", "tp = 2", "zero = 1", "zero = 2"}) {
    const RunConfig rc = load_run_config(testing::write_toml(std::string(kBase) + extra + "\n"));
    const int world = rc.train.parallelism.world_size();
    EXPECT_NO_THROW(rc.train.validate(rc.model, world)) << extra;
  }
}

// Sigmoid routing and the expert bias (docs/moe.md), and moe_layer_freq
// as a string: Megatron's list expression.
TEST(MoeRunConfig, SigmoidRouterKeys) {
  std::string body = kBase;
  body.replace(body.find("moe_layer_freq = 2"), 18,
               "moe_layer_freq = \"([1]*1+[0]*0)*2\"\nmoe_router_score_function = \"sigmoid\"\n"
               "moe_router_enable_expert_bias = true\nmoe_router_bias_update_rate = 0.01");
  const RunConfig rc = load_run_config(testing::write_toml(body));
  const MoeConfig& m = rc.model.moe;
  EXPECT_EQ(m.layer_pattern, (std::vector<int>{1, 1}));
  EXPECT_EQ(m.score, ScoreFunction::Sigmoid);
  EXPECT_TRUE(m.expert_bias);
  EXPECT_EQ(m.bias_update_rate, 0.01);
  EXPECT_NO_THROW(rc.train.validate(rc.model, 4));
  EXPECT_EQ(error_after("moe_layer_freq = 2", "moe_router_enable_expert_bias = true"),
            "the moe expert bias (--moe-router-enable-expert-bias) needs sigmoid scores "
            "(--moe-router-score-function sigmoid); the score function is softmax");
  EXPECT_EQ(error_after("moe_layer_freq = 2", "moe_router_bias_update_rate = -1.0"),
            "moe router bias update rate must be non-negative, got -1");
  EXPECT_EQ(error_after("moe_layer_freq = 2", "moe_router_score_function = \"tanh\""),
            "unknown moe router score function 'tanh' (expected softmax or sigmoid)");
}

TEST(MoeRunConfig, GroupRouterKeysAndTheirRecord) {
  std::string body = kBase;
  body.replace(body.find("num_experts = 4"), 15, "num_experts = 8");
  body.replace(body.find("moe_layer_freq = 2"), 18,
               "moe_layer_freq = 1\nmoe_router_score_function = \"sigmoid\"\n"
               "moe_router_num_groups = 4\nmoe_router_group_topk = 2\n"
               "moe_router_topk_scaling_factor = 2.5");
  const RunConfig rc = load_run_config(testing::write_toml(body));
  const MoeConfig& m = rc.model.moe;
  EXPECT_EQ(m.num_groups, 4);
  EXPECT_EQ(m.group_topk, 2);
  EXPECT_EQ(m.topk_scaling_factor, 2.5);
  EXPECT_NO_THROW(rc.train.validate(rc.model, 4));
  // A checkpoint's config.json keeps them: generate and serve route alike.
  const ModelConfig back = model_config_from_hf(hf_config_json(rc.model, "float32"), "test");
  EXPECT_EQ(back.moe.num_groups, 4);
  EXPECT_EQ(back.moe.group_topk, 2);
  EXPECT_EQ(back.moe.topk_scaling_factor, 2.5);
}

}  // namespace
}  // namespace parallm
