// Qwen2-MoE directories (docs/moe.md): config.json -> ModelConfig (the
// published Qwen1.5-MoE-A2.7B config, the layer rule of decoder_sparse_step
// and mlp_only_layers, norm_topk_prob), the rule written back, a one-message
// refusal of each bad value, the tensor names of sparse and dense layers
// with an exact save / load round trip (with and without a shared expert),
// and the Mixtral export refusing what only Qwen2-MoE can say (while the
// layout, which checkpoints use, still names such a model's parameters).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>

#include "common/test_models.h"
#include "common/test_util.h"
#include "io/hf_config.h"
#include "io/hf_layout.h"
#include "io/hf_model.h"
#include "io/safetensors.h"

namespace parallm {
namespace {

namespace fs = std::filesystem;

// Qwen/Qwen1.5-MoE-A2.7B's config.json (the fields parallm reads).
nlohmann::json qwen15_moe_json() {
  return {{"architectures", {"Qwen2MoeForCausalLM"}},
          {"model_type", "qwen2_moe"},
          {"vocab_size", 151936},
          {"hidden_size", 2048},
          {"intermediate_size", 5632},
          {"num_hidden_layers", 24},
          {"num_attention_heads", 16},
          {"num_key_value_heads", 16},
          {"max_position_embeddings", 8192},
          {"rms_norm_eps", 1e-6},
          {"rope_theta", 1000000.0},
          {"hidden_act", "silu"},
          {"tie_word_embeddings", false},
          {"use_sliding_window", false},
          {"sliding_window", 32768},
          {"max_window_layers", 21},
          {"decoder_sparse_step", 1},
          {"moe_intermediate_size", 1408},
          {"shared_expert_intermediate_size", 5632},
          {"num_experts_per_tok", 4},
          {"num_experts", 60},
          {"norm_topk_prob", false},
          {"router_aux_loss_coef", 0.001},
          {"mlp_only_layers", nlohmann::json::array()}};
}

TEST(HfQwen2Moe, ReadsThePublishedConfig) {
  const ModelConfig c = model_config_from_hf(qwen15_moe_json(), "qwen1.5-moe/config.json");
  EXPECT_EQ(c.hf_model_type(), "qwen2_moe");
  EXPECT_TRUE(c.qkv_bias);
  EXPECT_EQ(c.moe.num_experts, 60);
  EXPECT_EQ(c.moe.topk, 4);
  EXPECT_EQ(c.moe.order, RouterOrder::SoftmaxTopk);
  EXPECT_FALSE(c.moe.renormalize);
  EXPECT_EQ(c.moe.expert_intermediate(c.intermediate), 1408);
  EXPECT_EQ(c.intermediate, 5632);
  EXPECT_EQ(c.moe.shared_intermediate, 5632);
  EXPECT_TRUE(c.moe.shared_expert_gate);
  EXPECT_TRUE(c.moe.layer_pattern.empty());
  for (int64_t l = 0; l < c.n_layers; ++l) EXPECT_TRUE(c.moe.is_moe_layer(l)) << l;
  EXPECT_EQ(c.num_parameters(), 14315784192);  // transformers' num_parameters()
}

TEST(HfQwen2Moe, LayerRuleAndRouterRoundTrip) {
  nlohmann::json j = qwen15_moe_json();
  j["num_hidden_layers"] = 6;
  j["decoder_sparse_step"] = 2;  // layers 1, 3, 5 ...
  j["mlp_only_layers"] = {3};    // ... less layer 3
  j["norm_topk_prob"] = true;
  const ModelConfig c = model_config_from_hf(j, "rule/config.json");
  for (int64_t l = 0; l < 6; ++l) EXPECT_EQ(c.moe.is_moe_layer(l), l == 1 || l == 5) << l;
  EXPECT_TRUE(c.moe.renormalize);
  // Written back with the same rule (a parallm-only config carries it too).
  nlohmann::json out = hf_config_json(c, "float32");
  EXPECT_EQ(out["model_type"], "qwen2_moe");
  EXPECT_EQ(out["architectures"][0], "Qwen2MoeForCausalLM");
  EXPECT_EQ(out["decoder_sparse_step"], 2);
  EXPECT_EQ(out["mlp_only_layers"], nlohmann::json::array({3}));
  EXPECT_EQ(out["norm_topk_prob"], true);
  EXPECT_EQ(out["moe_intermediate_size"], 1408);
  EXPECT_EQ(out["shared_expert_intermediate_size"], 5632);
  out.erase("parallm_moe");
  const ModelConfig back = model_config_from_hf(out, "back/config.json");
  EXPECT_EQ(back.moe.layer_pattern, c.moe.layer_pattern);
  EXPECT_EQ(back.num_parameters(), c.num_parameters());
  // A pattern Megatron's list gives: the step is the gcd of the MoE layers' l + 1.
  ModelConfig m = c;
  m.moe.set_layer_freq("[0,0,1,0,0,1]");  // layers 2 and 5: step 3, nothing listed
  out = hf_config_json(m, "float32");
  EXPECT_EQ(out["decoder_sparse_step"], 3);
  EXPECT_EQ(out["mlp_only_layers"], nlohmann::json::array());
  // top-k then softmax is softmax, top-k, renormalise.
  m.moe.order = RouterOrder::TopkSoftmax;
  m.moe.renormalize = false;
  EXPECT_EQ(hf_config_json(m, "float32")["norm_topk_prob"], true);
}

TEST(HfQwen2Moe, BadValuesOneClearMessageEach) {
  auto error_with = [](const char* key, nlohmann::json value) {
    nlohmann::json j = qwen15_moe_json();
    j[key] = std::move(value);
    return testing::error_of([&] { model_config_from_hf(j, "q/config.json"); });
  };
  EXPECT_EQ(error_with("moe_intermediate_size", 0),
            "q/config.json: moe_intermediate_size must be positive, got 0");
  EXPECT_EQ(error_with("decoder_sparse_step", 0),
            "q/config.json: decoder_sparse_step must be at least 1, got 0");
  EXPECT_EQ(error_with("mlp_only_layers", nlohmann::json::array({24})),
            "q/config.json: mlp_only_layers names layer 24 of 24 layers");
  EXPECT_EQ(error_with("shared_expert_intermediate_size", -1),
            "q/config.json: shared_expert_intermediate_size must be >= 0 (0: none), got -1");
  EXPECT_EQ(error_with("num_experts_per_tok", 61),
            "q/config.json: moe router topk (61) must be between 1 and num_experts (60)");
  nlohmann::json j = qwen15_moe_json();
  j.erase("moe_intermediate_size");
  EXPECT_EQ(testing::error_of([&] { model_config_from_hf(j, "q/config.json"); }),
            "q/config.json: missing required field 'moe_intermediate_size'");
}

// A 4-layer Qwen2-MoE: layers 1 and 3 sparse, experts of 40 features.
ModelConfig tiny_qwen2_moe(int64_t shared) {
  ModelConfig c = testing::tiny_llama();
  c.n_layers = 4;
  c.hf_type = "qwen2_moe";
  c.qkv_bias = true;
  c.moe.num_experts = 4;
  c.moe.topk = 2;
  c.moe.ffn_hidden_size = 40;
  c.moe.set_layer_freq("[0,1,0,1]");
  c.moe.shared_intermediate = shared;
  c.moe.shared_expert_gate = shared > 0;
  return c;
}

TEST(HfQwen2Moe, SaveLoadRoundTripIsExact) {
  for (int64_t shared : {int64_t{48}, int64_t{0}}) {
    testing::TempDir tmp;
    const std::string dir = tmp.file("qwen2_moe");
    Allocator a;
    const ModelConfig c = tiny_qwen2_moe(shared);
    Transformer m(c, a);
    m.params().init_random(7);
    save_hf_model(dir, m, DType::F32);
    auto st = SafetensorsFile::open((fs::path(dir) / "model.safetensors").string());
    const int64_t C = c.hidden;
    EXPECT_EQ(st.at("model.layers.1.mlp.gate.weight").shape, (std::vector<int64_t>{4, C}));
    EXPECT_EQ(st.at("model.layers.3.mlp.experts.2.up_proj.weight").shape,
              (std::vector<int64_t>{40, C}));
    EXPECT_EQ(st.at("model.layers.3.mlp.experts.2.down_proj.weight").shape,
              (std::vector<int64_t>{C, 40}));
    EXPECT_EQ(st.at("model.layers.0.mlp.gate_proj.weight").shape,
              (std::vector<int64_t>{c.intermediate, C}));
    EXPECT_EQ(st.find("model.layers.0.mlp.gate.weight"), nullptr);
    // transformers always builds a gated shared expert: 0 features when there is none.
    EXPECT_EQ(st.at("model.layers.1.mlp.shared_expert.gate_proj.weight").shape,
              (std::vector<int64_t>{shared, C}));
    EXPECT_EQ(st.at("model.layers.1.mlp.shared_expert_gate.weight").shape,
              (std::vector<int64_t>{1, C}));
    // Expert 2's up projection is slice 2 of the stacked tensor.
    const ParameterSet& ps = m.params();
    const auto up = st.read_as_f32(st.at("model.layers.3.mlp.experts.2.up_proj.weight"));
    EXPECT_EQ(up[5], ps.value({ps.find("layers.3.moe.experts.up.weight")})[2 * 40 * C + 5]);

    const ModelConfig back = read_hf_model_config(dir);
    EXPECT_EQ(back.hf_model_type(), "qwen2_moe");
    EXPECT_EQ(back.moe.layer_pattern, c.moe.layer_pattern);
    EXPECT_EQ(back.moe.expert_intermediate(back.intermediate), 40);
    Transformer m2(back, a);
    load_hf_weights(dir, m2);
    ASSERT_EQ(ps.total_numel(), m2.params().total_numel());
    for (int64_t i = 0; i < ps.total_numel(); ++i)
      ASSERT_EQ(ps.flat_values().data<float>()[i], m2.params().flat_values().data<float>()[i])
          << "shared " << shared;
  }
}

TEST(HfQwen2Moe, ExportRefusesWhatTheClassesCannotSay) {
  testing::TempDir tmp;
  Allocator a;
  auto export_error = [&](const ModelConfig& c) {
    Transformer m(c, a);
    return testing::error_of([&] { save_hf_model(tmp.file("out"), m, DType::F32); });
  };
  ModelConfig ungated = tiny_qwen2_moe(48);
  ungated.moe.shared_expert_gate = false;
  EXPECT_EQ(export_error(ungated),
            "Qwen2-MoE's shared expert is always gated (--moe-shared-expert-gate); this model's "
            "shared expert of 48 features has no gate");
  // Experts on a plain llama are written as Mixtral, whose experts are the MLP's width.
  ModelConfig mixtral = testing::tiny_llama();
  mixtral.moe.num_experts = 4;
  mixtral.moe.order = RouterOrder::TopkSoftmax;
  mixtral.moe.ffn_hidden_size = 40;
  EXPECT_EQ(mixtral.hf_model_type(), "mixtral");
  EXPECT_EQ(export_error(mixtral),
            "Mixtral's experts are intermediate_size (200) wide; this model's are 40 "
            "(--moe-ffn-hidden-size)");
  mixtral.moe.ffn_hidden_size = 0;
  mixtral.moe.set_layer_freq("[1,0]");
  EXPECT_EQ(export_error(mixtral),
            "Mixtral has experts in every layer; layer 1 is dense (moe layer frequency 1, a "
            "layer pattern)");
  // Checkpoints still list such a model's parameters through the layout (a
  // resume needs them): dense layer 1 has the MLP's names.
  std::vector<HfTensor> layout;
  ASSERT_NO_THROW(layout = hf_layout(mixtral));
  EXPECT_TRUE(std::any_of(layout.begin(), layout.end(), [](const HfTensor& t) {
    return t.parts == std::vector<std::string>{"layers.1.mlp.up.weight"};
  }));
  // Experts on a Qwen2 are written as Qwen2-MoE.
  ModelConfig qwen = testing::tiny_llama();
  qwen.qkv_bias = true;
  qwen.hf_type = "qwen2";
  qwen.moe.num_experts = 4;
  EXPECT_EQ(qwen.hf_model_type(), "qwen2_moe");
}

}  // namespace
}  // namespace parallm
