// --deepspeed: seed 003's example and a fuller config mapped onto a
// RunConfig, DeepSpeed's batch rules, and one clear error per bad key.
#include "train/config/deepspeed_config.h"

#include <gtest/gtest.h>

#include <cmath>

#include "base/error.h"

namespace parallm {
namespace {

// The JSON of seed 003 (003_4a6ad70ca487ce01.txt), as printed there.
constexpr const char* kSeed003 = R"({
  "train_batch_size": 16,
  "fp16": { "enabled": true },
  "zero_optimization": {
    "stage": 3,
    "offload_optimizer": { "device": "cpu" },
    "offload_param": { "device": "cpu" }
  },
  "gradient_accumulation_steps": 4,
  "gradient_checkpointing": true
})";

std::string error_of(const std::string& json) {
  RunConfig rc;
  try {
    auto r = apply_deepspeed_json(json, "ds.json", rc);
    resolve_deepspeed_batch(r.batch, 2, false, false, rc.train.training);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(DeepSpeedConfig, Seed003Example) {
  RunConfig rc;
  const auto r = apply_deepspeed_json(kSeed003, "ds.json", rc);
  resolve_deepspeed_batch(r.batch, /*dp=*/2, false, false, rc.train.training);
  EXPECT_EQ(rc.train.training.global_batch_size, 16);
  EXPECT_EQ(rc.train.training.micro_batch_size, 2);  // 16 / (4 x dp 2)
  EXPECT_EQ(rc.train.precision.matmul, Precision::FP16);
  EXPECT_EQ(rc.train.parallelism.dp.zero, 3);
  EXPECT_EQ(rc.train.training.recompute, Recompute::Full);
  EXPECT_EQ(r.notes.size(), 2u);  // both offloads: already host memory on a CPU run
  EXPECT_TRUE(r.runtime_only.empty());
}

TEST(DeepSpeedConfig, FullerConfig) {
  RunConfig rc;
  const auto r = apply_deepspeed_json(R"({
    "train_micro_batch_size_per_gpu": 3, "gradient_accumulation_steps": 2,
    "gradient_clipping": 0.5, "steps_per_print": 7, "wall_clock_breakdown": false,
    "bf16": {"enabled": true},
    "zero_optimization": {"stage": 2, "overlap_comm": false, "reduce_bucket_size": 5e8,
                          "contiguous_gradients": true},
    "optimizer": {"type": "Adam", "params": {"lr": 3e-4, "betas": [0.8, 0.99], "eps": 1e-6,
                                             "weight_decay": 0.01}},
    "scheduler": {"type": "WarmupDecayLR", "params": {"warmup_min_lr": 3e-5,
                  "warmup_max_lr": 3e-4, "warmup_num_steps": 5, "warmup_type": "linear",
                  "total_num_steps": 20}},
    "tensorboard": {"enabled": true, "output_path": "tb", "job_name": "run1"}
  })",
                                      "ds.json", rc);
  resolve_deepspeed_batch(r.batch, /*dp=*/2, false, false, rc.train.training);
  const TrainConfig& t = rc.train;
  EXPECT_EQ(t.training.micro_batch_size, 3);
  EXPECT_EQ(t.training.global_batch_size, 12);
  EXPECT_EQ(t.training.clip_grad, 0.5);
  EXPECT_EQ(t.logging.log_interval, 7);
  EXPECT_EQ(t.precision.matmul, Precision::BF16);
  EXPECT_EQ(t.parallelism.dp.zero, 2);
  EXPECT_FALSE(t.parallelism.dp.overlap);
  EXPECT_NEAR(t.parallelism.dp.bucket_mb, 5e8 * 4 / 1048576.0, 1e-9);
  EXPECT_EQ(t.optimizer.kind, OptimizerKind::AdamW);  // DeepSpeed's Adam: adam_w_mode true
  EXPECT_EQ(t.optimizer.beta1, 0.8);
  EXPECT_EQ(t.optimizer.eps, 1e-6);
  EXPECT_EQ(t.logging.tensorboard_dir, "tb/run1");
  EXPECT_EQ(r.runtime_only, (std::vector<std::string>{"wall_clock_breakdown",
                                                      "zero_optimization.contiguous_gradients"}));
  // DeepSpeed's WarmupDecayLR at iteration s: min + (max - min) * gamma(s),
  // gamma = s / 5 in warmup, then (20 - s) / (20 - 5).
  const LrSchedule sched = rc.train.schedule();
  for (int s : {0, 1, 4, 5, 10, 19, 20, 25}) {
    const double gamma = s < 5 ? s / 5.0 : std::max(0.0, (20.0 - s) / 15.0);
    EXPECT_NEAR(sched.at(s), 3e-5 + (3e-4 - 3e-5) * gamma, 1e-12) << "step " << s;
  }
}

TEST(DeepSpeedConfig, LogWarmupAndConstant) {
  RunConfig rc;
  apply_deepspeed_json(R"({"scheduler": {"type": "WarmupLR", "params": {"warmup_max_lr": 0.01,
                          "warmup_num_steps": 8}}})",
                       "ds.json", rc);
  const LrSchedule sched = rc.train.schedule();
  for (int s : {0, 1, 3, 7, 8, 100})  // log(s + 1) / log(8) from warmup_min_lr 0, then 0.01
    EXPECT_NEAR(sched.at(s), s < 8 ? 0.01 * std::log(s + 1.0) / std::log(8.0) : 0.01, 1e-12);
  EXPECT_EQ(rc.train.optimizer.kind, OptimizerKind::AdamW);  // no optimizer key: unchanged
}

TEST(DeepSpeedConfig, ClearErrors) {
  EXPECT_NE(error_of(R"({"zero_optimization": {"stage": 2, "foo": 1}})")
                .find("unsupported DeepSpeed key 'zero_optimization.foo'"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"amp": {"enabled": true}})").find("'amp'"), std::string::npos);
  EXPECT_NE(error_of(R"({"train_batch_size": 16, "train_micro_batch_size_per_gpu": 3,
                         "gradient_accumulation_steps": 2})")
                .find("train_batch_size (16) != train_micro_batch_size_per_gpu (3) x "
                      "gradient_accumulation_steps (2) x dp (2)"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"train_batch_size": "auto"})").find("\"auto\""), std::string::npos);
  EXPECT_NE(
      error_of(R"({"zero_optimization": {"offload_param": {"device": "nvme"}}})").find("'nvme'"),
      std::string::npos);
  EXPECT_NE(error_of(R"({"optimizer": {"type": "Lamb"}})").find("'Lamb'"), std::string::npos);
  EXPECT_NE(error_of(R"({"scheduler": {"type": "OneCycle"}})").find("'OneCycle'"),
            std::string::npos);
  EXPECT_NE(error_of("{not json").find("not valid JSON"), std::string::npos);
  EXPECT_EQ(error_of(kSeed003), "");
}

TEST(LrSchedule, DecayStyles) {
  LrSchedule s{.lr = 1.0, .warmup = 2, .total_steps = 12, .min_lr_ratio = 0.5};
  EXPECT_DOUBLE_EQ(s.at(0), 0.5);  // llm.c warmup: (s + 1) / warmup
  s.decay_style = DecayStyle::Linear;
  EXPECT_DOUBLE_EQ(s.at(7), 0.75);  // halfway from 1 to 0.5
  EXPECT_DOUBLE_EQ(s.at(12), 0.5);
  s.decay_style = DecayStyle::Constant;
  EXPECT_DOUBLE_EQ(s.at(11), 1.0);
  s.decay_style = DecayStyle::Cosine;
  EXPECT_DOUBLE_EQ(s.at(7), 0.75);  // cosine's midpoint too
}

}  // namespace
}  // namespace parallm
