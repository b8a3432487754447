#include "train/config/train_config.h"
#include "common/run_config_file.h"

#include "base/error.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>

namespace fs = std::filesystem;

namespace parallm {
namespace {

using testing::write_toml;

std::string error_of(const std::string& body) { return testing::run_config_error(body); }

TEST(RunConfig, ReadsTablesAndDerivesSizes) {
  RunConfig rc = load_run_config(write_toml(R"(
[model]
arch = "llama"
vocab_size = 1000
hidden_size = 72
num_layers = 2
num_heads = 6
num_kv_heads = 2
intermediate_size = 200
attention_dropout = 0.1
[data]
train = ["a.bin", "/abs/b.bin"]
[training]
steps = 7
[optimizer]
name = "muon"
lr = 0.5
[parallelism]
dp = 2
dp_mode = "ps"
[checkpoint]
save = "ck"
[logging]
metrics = "out/m.jsonl"
)"));
  EXPECT_EQ(rc.model.arch, Arch::LLaMA);
  EXPECT_EQ(rc.model.head_dim, 12);
  EXPECT_EQ(rc.model.n_kv_heads, 2);
  EXPECT_EQ(rc.model.attn_dropout, 0.1);
  EXPECT_EQ(rc.train.training.steps, 7);
  EXPECT_EQ(rc.train.optimizer.kind, OptimizerKind::Muon);
  EXPECT_EQ(rc.train.optimizer.lr, 0.5);
  EXPECT_EQ(rc.train.parallelism.dp.dp, 2);
  EXPECT_EQ(rc.train.parallelism.dp.mode, DpMode::ParameterServer);
  EXPECT_EQ(rc.train.checkpoint.save_dir, (fs::temp_directory_path() / "ck").string());
  ASSERT_EQ(rc.train.data.train.size(), 2u);
  EXPECT_EQ(rc.train.data.train[0], (fs::temp_directory_path() / "a.bin").string());
  EXPECT_EQ(rc.train.data.train[1], "/abs/b.bin");
  EXPECT_EQ(rc.train.logging.metrics_path, (fs::temp_directory_path() / "out/m.jsonl").string());
}

TEST(RunConfig, DataBlendKeepsWeightsAndResolvesPaths) {
  RunConfig rc = load_run_config(write_toml(R"(
[model]
preset = "gpt2-tiny"
[data]
train = ["0.7", "mega/a_train", "0.3", "/abs/b.bin"]
)"));
  const std::vector<std::string> want = {
      "0.7", (fs::temp_directory_path() / "mega/a_train").string(), "0.3", "/abs/b.bin"};
  EXPECT_EQ(rc.train.data.train, want);
}

TEST(RunConfig, PresetWithGpt2Defaults) {
  RunConfig rc = load_run_config(write_toml("[model]\npreset = \"gpt2-tiny\"\nhidden_size = 96\n"));
  EXPECT_EQ(rc.model.hidden, 96);
  EXPECT_EQ(rc.model.intermediate, 384);  // 4 x hidden
  EXPECT_EQ(rc.model.head_dim, 16);       // hidden / 6 heads
}

TEST(RunConfig, ReadsTheLlamaRelativesTraits) {
  RunConfig rc = load_run_config(write_toml(R"(
[model]
preset = "llama-tiny"
family = "llama"
rope_scaling = "llama3"
rope_scaling_factor = 8.0
rope_scaling_low_freq_factor = 1.0
rope_scaling_high_freq_factor = 4.0
rope_scaling_original_max_positions = 64
)"));
  const RopeScaling& r = rc.model.rope_scaling;
  EXPECT_EQ(r.type, RopeScalingType::Llama3);
  EXPECT_EQ(r.factor, 8.0);
  EXPECT_EQ(r.original_max_positions, 64);
  EXPECT_EQ(rc.model.hf_model_type(), "llama");
  rc = load_run_config(write_toml(R"([model]
preset = "llama-tiny"
qkv_bias = true
)"));
  EXPECT_TRUE(rc.model.qkv_bias);
  EXPECT_EQ(rc.model.hf_model_type(), "qwen2");
  rc = load_run_config(write_toml(R"([model]
preset = "llama-tiny"
sliding_window = 32
)"));
  EXPECT_EQ(rc.model.sliding_window, 32);
  EXPECT_EQ(rc.model.hf_model_type(), "mistral");
  EXPECT_NE(error_of(R"([model]
preset = "llama-tiny"
rope_scaling = "yarn"
)")
                .find("unknown rope_scaling 'yarn'"),
            std::string::npos);
}

TEST(RunConfig, ErrorsNameTheProblem) {
  EXPECT_NE(error_of("[training]\nstesp = 3\n").find("unknown key 'stesp' in [training]"),
            std::string::npos);
  // A key in the wrong table is unknown there.
  EXPECT_NE(error_of("[training]\nlr = 3\n").find("unknown key 'lr' in [training]"),
            std::string::npos);
  EXPECT_NE(error_of("[trian]\n").find("unknown table 'trian'"), std::string::npos);
  // The flat table this tree replaced is named with a pointer to the new ones.
  EXPECT_NE(error_of("[train]\nsteps = 3\n").find("[train] was split into those tables"),
            std::string::npos);
  EXPECT_NE(error_of("[training]\nsteps = \"many\"\n").find("steps must be an integer"),
            std::string::npos);
  EXPECT_NE(error_of("[optimizer]\nname = \"lion\"\n").find("unknown optimizer 'lion'"),
            std::string::npos);
  EXPECT_NE(error_of("[training\nsteps = 1\n").find("malformed TOML"), std::string::npos);
  EXPECT_NE(error_of("[model]\npreset = \"gpt5\"\n").find("unknown model 'gpt5'"),
            std::string::npos);
  EXPECT_NE(error_of("[model]\narch = \"bert\"\n").find("unknown model arch 'bert'"),
            std::string::npos);
  try {
    load_run_config("/nonexistent/run.toml");
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "config file '/nonexistent/run.toml' does not exist");
  }
}

// Each part names its own bad values; TrainConfig::validate the ones that
// relate two parts or the model.
// dp not given is the world over tp x pp x cp; a dp given, or a world the
// other sizes do not divide, is left for the layout check to judge.
TEST(ParallelismConfig, InfersDpFromTheWorld) {
  auto inferred = [](int world, int tp, int pp, int cp, int dp) {
    ParallelismConfig p;
    p.tp = tp;
    p.pp = pp;
    p.cp = cp;
    p.dp.dp = dp;
    p.infer_dp(world);
    return p.dp.dp;
  };
  EXPECT_EQ(inferred(4, 2, 1, 1, 1), 2);
  EXPECT_EQ(inferred(8, 2, 2, 1, 1), 2);
  EXPECT_EQ(inferred(8, 1, 1, 2, 1), 4);
  EXPECT_EQ(inferred(2, 1, 1, 1, 1), 2);
  EXPECT_EQ(inferred(1, 1, 1, 1, 1), 1);
  EXPECT_EQ(inferred(4, 1, 1, 1, 2), 2);  // given: kept (the layout check names the mismatch)
  EXPECT_EQ(inferred(3, 2, 1, 1, 1), 1);  // 3 ranks, tp 2: nothing divides
  EXPECT_EQ(inferred(0, 2, 1, 1, 1), 1);  // world unknown
}

TEST(TrainConfig, ValidateNamesTheValues) {
  auto error_of_run = [](const std::function<void(TrainConfig&)>& edit) {
    TrainConfig t;
    t.data.train = {"x.bin"};
    edit(t);
    try {
      t.validate(ModelConfig{});
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_EQ(error_of_run([](TrainConfig&) {}), "(no error)");
  EXPECT_NE(error_of_run([](TrainConfig& t) { t.data.train.clear(); }).find("no training data"),
            std::string::npos);
  EXPECT_NE(
      error_of_run([](TrainConfig& t) { t.optimizer.lr = 0; }).find("lr must be positive, got 0"),
      std::string::npos);
  EXPECT_NE(
      error_of_run([](TrainConfig& t) { t.optimizer.beta2 = 1; }).find("betas must be in [0, 1)"),
      std::string::npos);
  EXPECT_NE(error_of_run([](TrainConfig& t) {
              t.lr_schedule.min_lr_ratio = 2;
            }).find("min_lr_ratio must be in [0, 1], got 2"),
            std::string::npos);
  EXPECT_NE(error_of_run([](TrainConfig& t) {
              t.checkpoint.resume = true;
            }).find("--resume needs --save, --snapshot or --load"),
            std::string::npos);
  EXPECT_NE(error_of_run([](TrainConfig& t) {
              t.logging.log_interval = 0;
            }).find("log_interval must be positive, got 0"),
            std::string::npos);
  EXPECT_NE(error_of_run([](TrainConfig& t) {
              t.training.seq_len = 2048;
            }).find("seq_len (2048) exceeds the model's max_positions (1024)"),
            std::string::npos);
  EXPECT_NE(error_of_run([](TrainConfig& t) { t.parallelism.dp.dp = 3; })
                .find("global batch size (4) is not divisible by micro batch size (4) times data "
                      "parallel size (3)"),
            std::string::npos);
  EXPECT_NE(error_of_run([](TrainConfig& t) {
              t.logging.trace_path = "t.json";
            }).find("--trace and --timeline record the pipeline schedule"),
            std::string::npos);
}

}  // namespace
}  // namespace parallm
