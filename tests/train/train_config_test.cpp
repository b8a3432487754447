#include "train/train_config.h"

#include "base/error.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;

namespace parallm {
namespace {

std::string write_toml(const std::string& body) {
  fs::path p = fs::temp_directory_path() / ("parallm_cfg_" + std::to_string(getpid()) + ".toml");
  std::ofstream(p) << body;
  return p.string();
}

std::string error_of(const std::string& body) {
  try {
    load_run_config(write_toml(body));
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

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
[data]
train = ["a.bin", "/abs/b.bin"]
[train]
steps = 7
lr = 0.5
metrics = "out/m.jsonl"
)"));
  EXPECT_EQ(rc.model.arch, Arch::LLaMA);
  EXPECT_EQ(rc.model.head_dim, 12);
  EXPECT_EQ(rc.model.n_kv_heads, 2);
  EXPECT_EQ(rc.train.steps, 7);
  EXPECT_EQ(rc.train.lr, 0.5);
  ASSERT_EQ(rc.train.train_files.size(), 2u);
  EXPECT_EQ(rc.train.train_files[0], (fs::temp_directory_path() / "a.bin").string());
  EXPECT_EQ(rc.train.train_files[1], "/abs/b.bin");
  EXPECT_EQ(rc.train.metrics_path, (fs::temp_directory_path() / "out/m.jsonl").string());
}

TEST(RunConfig, PresetWithGpt2Defaults) {
  RunConfig rc = load_run_config(write_toml("[model]\npreset = \"gpt2-tiny\"\nhidden_size = 96\n"));
  EXPECT_EQ(rc.model.hidden, 96);
  EXPECT_EQ(rc.model.intermediate, 384);  // 4 x hidden
  EXPECT_EQ(rc.model.head_dim, 16);       // hidden / 6 heads
}

TEST(RunConfig, ErrorsNameTheProblem) {
  EXPECT_NE(error_of("[train]\nstesp = 3\n").find("unknown key 'stesp' in [train]"),
            std::string::npos);
  EXPECT_NE(error_of("[trian]\n").find("unknown table 'trian'"), std::string::npos);
  EXPECT_NE(error_of("[train]\nsteps = \"many\"\n").find("steps must be an integer"),
            std::string::npos);
  EXPECT_NE(error_of("[train\nsteps = 1\n").find("malformed TOML"), std::string::npos);
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

}  // namespace
}  // namespace parallm
