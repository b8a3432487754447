#include "plan/memory_model.h"

#include <gtest/gtest.h>

#include "common/test_util.h"
#include "model/model_catalog.h"

namespace parallm {
namespace {

MemoryQuery gpt3(int64_t b) {
  MemoryQuery q;
  q.model = catalog_model("gpt3-175b");
  q.seq_len = 2048;
  q.micro_batch = b;
  q.precision = Precision::FP16;
  return q;
}

// Seed 003's GPT-3 175B figures: 350 GB of fp16 parameters; activations
// without recomputation of 275 GB at b = 1, 17.6 TB at 64, 35.3 TB at 128
// (96 layers x (34sbh + 5as^2b) bytes).
TEST(MemoryModel, ReproducesTheSeedGpt3Numbers) {
  MemoryBreakdown r1 = estimate_memory(gpt3(1));
  EXPECT_NEAR(r1.parameters / 1e9, 350.0, 350.0 * 0.005);  // 174.6B x 2 bytes
  EXPECT_NEAR(r1.activations / 1e9, 275.0, 0.5);
  EXPECT_NEAR(estimate_memory(gpt3(64)).activations / 1e12, 17.6, 0.05);
  EXPECT_NEAR(estimate_memory(gpt3(128)).activations / 1e12, 35.3, 0.05);
  // The formula itself: s*b*h*(34 + 5*a*s/h) per layer.
  const double s = 2048, h = 12288, a = 96;
  EXPECT_DOUBLE_EQ(r1.activation_per_layer, s * h * (34 + 5 * a * s / h));
}

TEST(MemoryModel, ZeroStagesDivideStatesAsThePaperSays) {
  MemoryQuery q = gpt3(1);
  q.precision = Precision::BF16;
  q.dp = 8;
  MemoryBreakdown z0 = estimate_memory(q);
  const double psi = static_cast<double>(z0.params_per_rank);
  EXPECT_DOUBLE_EQ(z0.parameters, 2 * psi);
  EXPECT_DOUBLE_EQ(z0.gradients, 2 * psi);
  EXPECT_DOUBLE_EQ(z0.optimizer, 12 * psi);  // fp32 master + m + v
  q.zero = 1;
  EXPECT_DOUBLE_EQ(estimate_memory(q).optimizer, 12 * psi / 8);
  q.zero = 2;
  EXPECT_DOUBLE_EQ(estimate_memory(q).gradients, 2 * psi / 8);
  q.zero = 3;
  EXPECT_DOUBLE_EQ(estimate_memory(q).parameters, 2 * psi / 8);
  q.precision = Precision::FP32;
  q.zero = 0;
  MemoryBreakdown f = estimate_memory(q);
  EXPECT_DOUBLE_EQ(f.parameters + f.gradients + f.optimizer, 16 * psi);  // 4 + 4 + 8
}

TEST(MemoryModel, TensorAndSequenceParallelActivations) {
  MemoryQuery q = gpt3(1);
  q.tp = 8;
  const double s = 2048, h = 12288, a = 96, t = 8, sbh = s * h;
  EXPECT_DOUBLE_EQ(estimate_memory(q).activation_per_layer,
                   sbh * (10 + 24 / t + 5 * a * s / (h * t)));
  q.sequence_parallel = true;
  EXPECT_DOUBLE_EQ(estimate_memory(q).activation_per_layer, sbh * (34 / t + 5 * a * s / (h * t)));
  q.recompute = Recompute::Selective;
  EXPECT_DOUBLE_EQ(estimate_memory(q).activation_per_layer, sbh * 34 / t);
  q.recompute = Recompute::Full;
  EXPECT_DOUBLE_EQ(estimate_memory(q).activation_per_layer, 2 * sbh / t);
}

TEST(MemoryModel, PipelineInFlightMicroBatches) {
  MemoryQuery q = gpt3(1);
  q.pp = 8;
  q.micro_batches = 32;
  EXPECT_EQ(estimate_memory(q).micro_batches_in_flight, 8);  // 1F1B: pp on stage 0
  q.schedule = pipeline::ScheduleKind::GPipe;
  EXPECT_EQ(estimate_memory(q).micro_batches_in_flight, 32);  // GPipe: all m
  q.schedule = pipeline::ScheduleKind::Interleaved;
  q.virtual_stages = 2;
  EXPECT_DOUBLE_EQ(estimate_memory(q).micro_batches_in_flight, 8 * (1 + 7.0 / 16));
}

TEST(MemoryModel, SuggestionsFitAndErrorsNameValues) {
  MemoryQuery q;
  q.model = catalog_model("llama2-70b");
  q.seq_len = 4096;
  q.tp = 8;
  q.dp = 8;
  const double device = parse_bytes("80GiB");
  ASSERT_GT(estimate_memory(q).total(), device);
  auto s = suggest_fits(q, device);
  ASSERT_FALSE(s.empty());
  for (const auto& x : s) EXPECT_LE(estimate_memory(x.query).total(), device) << x.change;
  q.tp = 3;
  EXPECT_EQ(testing::error_of([&] { estimate_memory(q); }),
            "num_attention_heads (64) is not divisible by tp (3)");
  EXPECT_EQ(parse_bytes("1.5KiB"), 1536.0);
  EXPECT_NE(testing::error_of([] { parse_bytes("80 parsecs"); }).find("unknown unit"),
            std::string::npos);
  EXPECT_NE(testing::error_of([] { catalog_model("gpt5"); }).find("unknown model 'gpt5'"),
            std::string::npos);
  EXPECT_EQ(catalog_model("llama2-7b").num_parameters(), 6738415616);
  EXPECT_EQ(catalog_model("llama3-8b").num_parameters(), 8030261248);
  // Experts are counted (moe_memory_test.cpp), never as the dense model;
  // layouts the trainer refuses are refused with its message.
  q = MemoryQuery{};
  q.model = catalog_model("mixtral-8x7b");
  EXPECT_EQ(estimate_memory(q).params_per_rank, 46702792704);
  q.dp = 4;
  q.ep = 3;
  EXPECT_NE(testing::error_of([&] {
              estimate_memory(q);
            }).find("num_experts (8) is not divisible by ep (3)"),
            std::string::npos);
}

}  // namespace
}  // namespace parallm
