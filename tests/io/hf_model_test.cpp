#include "io/hf_model.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

#include "common/test_models.h"
#include "common/test_util.h"
#include "io/hf_config.h"
#include "io/safetensors.h"
#include "tensor/half.h"

namespace fs = std::filesystem;

namespace parallm {
namespace {

fs::path temp_dir(const std::string& name) {
  fs::path p = fs::temp_directory_path() / ("parallm_hf_" + name + "_" + std::to_string(getpid()));
  fs::remove_all(p);
  return p;
}

using testing::error_of;

class HfBoth : public ::testing::TestWithParam<bool> {
 protected:
  ModelConfig cfg() const { return GetParam() ? testing::tiny_llama() : testing::tiny_gpt2(); }
};

TEST_P(HfBoth, SaveLoadRoundTripIsExactInF32) {
  fs::path dir = temp_dir("rt");
  Allocator a;
  Transformer m(cfg(), a);
  m.params().init_random(9);
  save_hf_model(dir.string(), m, DType::F32);
  ModelConfig back = read_hf_model_config(dir.string());
  EXPECT_EQ(back.arch, cfg().arch);
  EXPECT_EQ(back.n_kv_heads, cfg().n_kv_heads);
  EXPECT_EQ(back.tie_embeddings, cfg().tie_embeddings);
  Transformer m2(back, a);
  load_hf_weights(dir.string(), m2);
  for (int64_t i = 0; i < m.params().total_numel(); ++i)
    ASSERT_EQ(m.params().flat_values().data<float>()[i],
              m2.params().flat_values().data<float>()[i]);
  fs::remove_all(dir);
}

TEST_P(HfBoth, Bf16SaveRoundsToNearestEven) {
  fs::path dir = temp_dir("bf16");
  Allocator a;
  Transformer m(cfg(), a);
  m.params().init_random(9);
  save_hf_model(dir.string(), m, DType::BF16);
  Transformer m2(cfg(), a);
  load_hf_weights(dir.string(), m2);
  for (int64_t i = 0; i < m.params().total_numel(); ++i) {
    float v = m.params().flat_values().data<float>()[i];
    ASSERT_EQ(bf16_to_f32(f32_to_bf16(v)), m2.params().flat_values().data<float>()[i]);
  }
  auto st = SafetensorsFile::open((dir / "model.safetensors").string());
  EXPECT_EQ(st.entries()[0].dtype, DType::BF16);
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Families, HfBoth, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "llama" : "gpt2"; });

// GPT-2's Conv1D weights are stored (in, out) and c_attn fuses q, k, v.
TEST(HfLayout, Gpt2ConvWeightsAreTransposedAndFused) {
  fs::path dir = temp_dir("conv");
  Allocator a;
  ModelConfig c = testing::tiny_gpt2();
  Transformer m(c, a);
  m.params().init_random(2);
  save_hf_model(dir.string(), m, DType::F32);
  auto st = SafetensorsFile::open((dir / "model.safetensors").string());
  const auto& e = st.at("transformer.h.1.attn.c_attn.weight");
  ASSERT_EQ(e.shape, (std::vector<int64_t>{72, 216}));
  auto w = st.read_as_f32(e);
  const ParameterSet& ps = m.params();
  const float* k = ps.value({ps.find("layers.1.attn.k.weight")});  // (out 72, in 72)
  // HF column 72 + j, row i  ==  internal k.weight[j][i]
  EXPECT_EQ(w[5 * 216 + 72 + 3], k[3 * 72 + 5]);
  EXPECT_EQ(st.find("lm_head.weight"), nullptr);  // tied
  fs::remove_all(dir);
}

// Qwen2: LLaMA's names plus self_attn.{q,k,v}_proj.bias (no o_proj.bias),
// model_type qwen2, and an exact round trip of non-zero biases.
TEST(HfLayout, Qwen2HasQueryKeyValueBiases) {
  fs::path dir = temp_dir("qwen2");
  Allocator a;
  ModelConfig c = testing::tiny_llama();
  c.qkv_bias = true;
  Transformer m(c, a);
  m.params().init_random(4);
  const ParameterSet& ps = m.params();
  for (int i = 0; i < ps.size(); ++i)  // biases start at zero: make them count
    if (ps.spec(i).name.ends_with(".bias"))
      for (int64_t j = 0; j < ps.numel(i); ++j) ps.value(ParamRef{i})[j] = 0.01f * (j + i);
  save_hf_model(dir.string(), m, DType::F32);
  auto st = SafetensorsFile::open((dir / "model.safetensors").string());
  ASSERT_NE(st.find("model.layers.1.self_attn.q_proj.bias"), nullptr);
  EXPECT_EQ(st.at("model.layers.1.self_attn.q_proj.bias").shape, (std::vector<int64_t>{c.q_dim()}));
  EXPECT_EQ(st.at("model.layers.0.self_attn.k_proj.bias").shape,
            (std::vector<int64_t>{c.kv_dim()}));
  const auto v = st.read_as_f32(st.at("model.layers.0.self_attn.v_proj.bias"));
  EXPECT_EQ(v[5], ps.value({ps.find("layers.0.attn.v.bias")})[5]);
  EXPECT_EQ(st.find("model.layers.0.self_attn.o_proj.bias"), nullptr);
  ModelConfig back = read_hf_model_config(dir.string());
  EXPECT_TRUE(back.qkv_bias);
  EXPECT_EQ(back.hf_model_type(), "qwen2");
  Transformer m2(back, a);
  load_hf_weights(dir.string(), m2);
  for (int64_t i = 0; i < ps.total_numel(); ++i)
    ASSERT_EQ(ps.flat_values().data<float>()[i], m2.params().flat_values().data<float>()[i]);
  // Without the biases the directory is not a Qwen2 model.
  ModelConfig plain = testing::tiny_llama();
  Transformer m3(plain, a);
  EXPECT_NE(error_of([&] { load_hf_weights(dir.string(), m3); }).find("unexpected tensor"),
            std::string::npos);
  fs::remove_all(dir);
}

TEST(HfConfig, ReadsQwen2) {
  nlohmann::json j = {{"model_type", "qwen2"},
                      {"vocab_size", 151936},
                      {"hidden_size", 896},
                      {"intermediate_size", 4864},
                      {"num_hidden_layers", 24},
                      {"num_attention_heads", 14},
                      {"num_key_value_heads", 2},
                      {"rms_norm_eps", 1e-6},
                      {"max_position_embeddings", 32768},
                      {"rope_theta", 1000000.0},
                      {"tie_word_embeddings", true},
                      {"hidden_act", "silu"},
                      {"use_sliding_window", false},
                      {"sliding_window", 32768}};
  ModelConfig c = model_config_from_hf(j, "qwen2.5-0.5b/config.json");
  EXPECT_TRUE(c.qkv_bias);
  EXPECT_EQ(c.sliding_window, 0);
  EXPECT_EQ(c.num_parameters(), 494032768);  // Qwen2.5-0.5B
  c.validate();
}

TEST(HfModel, LoadRefusesMismatchedFilesClearly) {
  fs::path dir = temp_dir("bad");
  Allocator a;
  Transformer m(testing::tiny_llama(), a);
  save_hf_model(dir.string(), m, DType::F32);

  // The config says a wider model than the weights hold.
  ModelConfig wider = testing::tiny_llama();
  wider.intermediate = 256;
  Transformer w(wider, a);
  std::string msg = error_of([&] { load_hf_weights(dir.string(), w); });
  EXPECT_TRUE(msg.find("has shape [200, 72], the config implies [256, 72]") != std::string::npos ||
              msg.find("has shape [72, 200], the config implies [72, 256]") != std::string::npos)
      << msg;

  // A tensor missing from the file.
  {
    auto st = SafetensorsFile::open((dir / "model.safetensors").string());
    SafetensorsWriter wr;
    for (const auto& e : st.entries())
      if (e.name != "model.norm.weight") wr.add_copy(e.name, e.dtype, e.shape, st.bytes(e).data());
    wr.write((dir / "model.safetensors").string());
  }
  Transformer m2(testing::tiny_llama(), a);
  EXPECT_NE(
      error_of([&] { load_hf_weights(dir.string(), m2); }).find("lacks tensor 'model.norm.weight'"),
      std::string::npos);

  EXPECT_NE(error_of([&] { read_hf_model_config((dir / "nope").string()); }).find("does not exist"),
            std::string::npos);
  std::ofstream(dir / "config.json") << "{\"model_type\": \"llama\", \"hidden_size\": ";
  EXPECT_NE(error_of([&] { read_hf_model_config(dir.string()); }).find("malformed JSON"),
            std::string::npos);
  std::ofstream(dir / "config.json") << "{\"model_type\": \"bert\"}";
  EXPECT_NE(error_of([&] {
              read_hf_model_config(dir.string());
            }).find("model_type 'bert' is not supported"),
            std::string::npos);
  std::ofstream(dir / "config.json") << "{\"model_type\": \"gpt2\", \"n_embd\": 72}";
  EXPECT_NE(error_of([&] { read_hf_model_config(dir.string()); }).find("missing required field"),
            std::string::npos);
  fs::remove_all(dir);
}

TEST(HfConfig, ReadsTheHfSchema) {
  nlohmann::json j = {{"model_type", "llama"},
                      {"vocab_size", 32000},
                      {"hidden_size", 4096},
                      {"intermediate_size", 11008},
                      {"num_hidden_layers", 32},
                      {"num_attention_heads", 32},
                      {"num_key_value_heads", 32},
                      {"rms_norm_eps", 1e-5},
                      {"max_position_embeddings", 4096},
                      {"rope_theta", 10000.0},
                      {"tie_word_embeddings", false},
                      {"hidden_act", "silu"}};
  ModelConfig c = model_config_from_hf(j, "llama2-7b/config.json");
  EXPECT_EQ(c.head_dim, 128);
  EXPECT_EQ(c.num_parameters(), 6738415616);                     // Llama-2-7b
  j["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 2.0}};  // not supported
  EXPECT_THROW(model_config_from_hf(j, "x"), Error);
}

TEST(HfModel, FailedSaveLeavesNothingBehind) {
  fs::path dir = temp_dir("fail");
  fs::create_directories(dir);
  fs::path blocker = dir / "file";
  std::ofstream(blocker) << "x";  // a file where a directory must go
  Allocator a;
  Transformer m(testing::tiny_gpt2(), a);
  EXPECT_THROW(save_hf_model((blocker / "model").string(), m, DType::F32), Error);
  int entries = 0;
  for (auto& e : fs::directory_iterator(dir)) entries += e.path() != blocker;
  EXPECT_EQ(entries, 0);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace parallm
