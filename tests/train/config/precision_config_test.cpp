// The run file's and flags' precision, recompute, NaN and loss-scale keys:
// read into TrainConfig, bad values refused with a message naming them.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "base/error.h"
#include "common/run_config_file.h"
#include "train/config/train_config.h"

namespace parallm {
namespace {

using testing::write_toml;

std::string error_of(const std::string& body) { return testing::run_config_error(body); }

TEST(PrecisionConfig, ReadsTheKeys) {
  const RunConfig rc = load_run_config(
      write_toml("[training]\nrecompute = \"selective\"\n"
                 "[precision]\nmatmul = \"fp16\"\non_nan = \"skip\"\n"
                 "initial_loss_scale = 1024.0\nmin_loss_scale = 2.0\nloss_scale_window = 50\n"
                 "hysteresis = 3\nemulate_lowp_gemm = true\n"));
  EXPECT_EQ(rc.train.precision.matmul, Precision::FP16);
  EXPECT_EQ(rc.train.training.recompute, Recompute::Selective);
  EXPECT_TRUE(rc.train.precision.skip_nonfinite);
  EXPECT_TRUE(rc.train.precision.emulate_lowp_gemm);
  EXPECT_EQ(rc.train.precision.loss_scale.initial_scale, 1024.0);
  EXPECT_EQ(rc.train.precision.loss_scale.min_scale, 2.0);
  EXPECT_EQ(rc.train.precision.loss_scale.window, 50);
  EXPECT_EQ(rc.train.precision.loss_scale.hysteresis, 3);
  const TrainConfig defaults;
  EXPECT_EQ(defaults.precision.matmul, Precision::FP32);
  EXPECT_EQ(defaults.training.recompute, Recompute::None);
  EXPECT_FALSE(defaults.precision.skip_nonfinite);  // --on-nan stop
}

TEST(PrecisionConfig, BadValuesAreNamed) {
  EXPECT_NE(error_of("[precision]\nmatmul = \"fp8\"\n").find("unknown precision 'fp8'"),
            std::string::npos);
  EXPECT_NE(error_of("[training]\nrecompute = \"some\"\n").find("unknown recompute mode 'some'"),
            std::string::npos);
  EXPECT_NE(error_of("[precision]\non_nan = \"ignore\"\n").find("--on-nan must be skip or stop"),
            std::string::npos);
  TrainConfig t;
  t.data.train = {"x.bin"};
  t.precision.matmul = Precision::FP16;
  t.precision.loss_scale.hysteresis = 0;
  ModelConfig m;
  try {
    t.validate(m);
    ADD_FAILURE() << "hysteresis 0 must be refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--hysteresis must be >= 1, got 0"), std::string::npos)
        << e.what();
  }
  t.precision.matmul = Precision::BF16;  // loss scaling is fp16's only
  EXPECT_NO_THROW(t.validate(m));
}

}  // namespace
}  // namespace parallm
