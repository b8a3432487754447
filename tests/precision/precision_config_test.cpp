// The run file's and flags' precision, recompute, NaN and loss-scale keys:
// read into TrainConfig, bad values refused with a message naming them.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "base/error.h"
#include "train/train_config.h"

namespace parallm {
namespace {

std::string write_toml(const std::string& body) {
  auto p = std::filesystem::temp_directory_path() /
           ("parallm_prec_cfg_" + std::to_string(getpid()) + ".toml");
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

TEST(PrecisionConfig, ReadsTheKeys) {
  const RunConfig rc = load_run_config(write_toml(
      "[train]\nprecision = \"fp16\"\nrecompute = \"selective\"\non_nan = \"skip\"\n"
      "initial_loss_scale = 1024.0\nmin_loss_scale = 2.0\nloss_scale_window = 50\n"
      "hysteresis = 3\nemulate_lowp_gemm = true\n"));
  EXPECT_EQ(rc.train.precision, Precision::FP16);
  EXPECT_EQ(rc.train.recompute, Recompute::Selective);
  EXPECT_TRUE(rc.train.skip_nonfinite);
  EXPECT_TRUE(rc.train.emulate_lowp_gemm);
  EXPECT_EQ(rc.train.loss_scale.initial_scale, 1024.0);
  EXPECT_EQ(rc.train.loss_scale.min_scale, 2.0);
  EXPECT_EQ(rc.train.loss_scale.window, 50);
  EXPECT_EQ(rc.train.loss_scale.hysteresis, 3);
  const TrainConfig defaults;
  EXPECT_EQ(defaults.precision, Precision::FP32);
  EXPECT_EQ(defaults.recompute, Recompute::None);
  EXPECT_FALSE(defaults.skip_nonfinite);  // --on-nan stop
}

TEST(PrecisionConfig, BadValuesAreNamed) {
  EXPECT_NE(error_of("[train]\nprecision = \"fp8\"\n").find("unknown precision 'fp8'"),
            std::string::npos);
  EXPECT_NE(error_of("[train]\nrecompute = \"some\"\n").find("unknown recompute mode 'some'"),
            std::string::npos);
  EXPECT_NE(error_of("[train]\non_nan = \"ignore\"\n").find("--on-nan must be skip or stop"),
            std::string::npos);
  TrainConfig t;
  t.train_files = {"x.bin"};
  t.precision = Precision::FP16;
  t.loss_scale.hysteresis = 0;
  ModelConfig m;
  try {
    t.validate(m);
    ADD_FAILURE() << "hysteresis 0 must be refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--hysteresis must be >= 1, got 0"), std::string::npos)
        << e.what();
  }
  t.precision = Precision::BF16;  // loss scaling is fp16's only
  EXPECT_NO_THROW(t.validate(m));
}

}  // namespace
}  // namespace parallm
