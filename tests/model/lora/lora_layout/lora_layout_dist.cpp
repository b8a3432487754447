// Layout invariance of LoRA training (docs/lora.md, DESIGN principle 1):
// with the base frozen and only adapters trained, dp 2 with ZeRO-2 (and
// ZeRO-3 with recomputation), tp 2 with sequence parallelism (A replicated /
// B split on column-parallel linears, A split / B replicated on row-parallel
// ones, the replicated factor's gradient summed over tp), and pp 2 follow the
// one-process trajectory for 20 steps: per-step losses and gradient norms,
// and every adapter parameter assembled whole, within the bounds docs/testing.md derives. One
// LLaMA run also draws adapter dropout (masks keyed by global indices).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "common/layout_groups.h"
#include "common/mpi_gtest.h"
#include "common/test_models.h"
#include "common/trajectory_config.h"
#include "common/trajectory_match.h"
#include "common/whole_parameters.h"
#include "model/lora/lora_model.h"
#include "model/transformer.h"
#include "train/pipeline_step.h"
#include "train/trainer.h"

namespace parallm::lora_test {

struct LoraTestEnv {
  comm::Communicator* world = nullptr;
  std::string shard;
};
LoraTestEnv& env() {
  static LoraTestEnv e;
  return e;
}

namespace {

struct Layout {
  int tp = 1, dp = 1, pp = 1;
  bool sp = false;
  int zero = 0;
  Recompute recompute = Recompute::None;
  std::string name() const {
    return fmt::format("tp {} dp {} pp {}{}{}{}", tp, dp, pp, sp ? " sp" : "",
                       zero ? fmt::format(" zero {}", zero) : "",
                       recompute != Recompute::None ? " recompute" : "");
  }
};

struct RunResult {
  bool ran = false;
  std::vector<double> losses, grad_norms;
  testing::NamedParams params;  // adapters, whole
  int64_t base_grad_bytes = 0;  // gradient bytes beyond the adapters' buffer
  TrainConfig config;           // the run's settings
};

ModelConfig lora_model(const std::string& family, double dropout) {
  ModelConfig m = family == "gpt2" ? testing::tp_gpt2() : testing::tp_llama();
  m.lora.rank = 4;
  m.lora.alpha = 16.0;
  m.lora.dropout = dropout;
  m.lora.targets = {"all-linear"};
  return m;
}

RunResult run(const ModelConfig& model, const Layout& l, int steps = 20) {
  testing::LayoutGroups g =
      testing::split_layout(*env().world, {.tp = l.tp, .dp = l.dp, .pp = l.pp});
  if (!g.member) return {};
  TpGroup tp{.comm = l.tp > 1 ? g.tp.get() : nullptr, .sequence_parallel = l.sp};
  TrainConfig t = testing::trajectory_config(env().shard, steps, "adamw", 1e-5);
  t.optimizer.lr = 1e-2;  // adapters move visibly in 20 steps
  t.parallelism.dp.dp = l.dp;
  t.parallelism.dp.zero = l.zero;
  t.parallelism.dp.bucket_mb = 0.01;
  t.parallelism.tp = l.tp;
  t.parallelism.sequence_parallel = l.sp;
  t.parallelism.pp = l.pp;
  t.training.recompute = l.recompute;
  t.validate(model, l.tp * l.dp * l.pp);
  Allocator alloc;
  Transformer m(model, alloc, tp, pipeline_stage(t, model, g.pp_rank));
  m.base_params().init_random(7);
  m.params().init_random(7);
  Trainer tr(m, t, alloc, 0.0, l.dp > 1 ? g.dp.get() : nullptr,
             PipelineGroups{l.pp > 1 ? g.pp.get() : nullptr, g.embedding.get()});
  RunResult res;
  res.ran = true;
  res.base_grad_bytes = alloc.current(MemTag::Gradient);
  tr.run([&](const StepStats& s) {
    res.losses.push_back(s.loss);
    res.grad_norms.push_back(s.grad_norm);
  });
  res.params = testing::whole_parameters(tr, m.params(), tp);
  res.config = t;
  return res;
}

void expect_same_trajectory(const std::string& family, const Layout& l, double dropout = 0.0) {
  const ModelConfig model = lora_model(family, dropout);
  static std::map<std::string, RunResult> cache;  // one-process runs
  const std::string key = family + fmt::format("{}", dropout);
  if (!cache.contains(key)) cache[key] = run(model, Layout{});
  const RunResult& ref = cache[key];
  const RunResult got = run(model, l);
  if (!got.ran) return;
  const std::string what = family + " " + l.name() + (dropout > 0 ? " dropout" : "");
  EXPECT_LT(ref.losses.back(), ref.losses.front() - 0.05) << what << ": LoRA training learns";
  for (const auto& [name, v] : got.params)  // only adapters are trained
    EXPECT_TRUE(name.ends_with(".lora_A") || name.ends_with(".lora_B")) << name;
  // A pipeline stage holds a subset of the adapters; the optimizer updates
  // the adapters only (ref.params holds all of them).
  const testing::Trajectory r = testing::trajectory_of(ref);
  testing::expect_same_trajectory(
      testing::run_arithmetic(ref.config, model, r, testing::element_count(r.params)), r,
      testing::trajectory_of(got), what, /*names_from_got=*/l.pp > 1);
  if (l.pp == 1) {
    EXPECT_EQ(got.params.size(), ref.params.size()) << what;
  }
}

TEST(LoraLayout, DataParallelZero2) {
  for (const char* family : {"llama", "gpt2"})
    expect_same_trajectory(family, Layout{.dp = 2, .zero = 2});
}

TEST(LoraLayout, DataParallelZero3Recompute) {
  expect_same_trajectory("llama", Layout{.dp = 2, .zero = 3, .recompute = Recompute::Full});
}

TEST(LoraLayout, TensorParallelSequenceParallel) {
  for (const char* family : {"llama", "gpt2"})
    expect_same_trajectory(family, Layout{.tp = 2, .sp = true});
  expect_same_trajectory("llama", Layout{.tp = 2, .sp = true}, /*dropout=*/0.1);
  expect_same_trajectory("llama", Layout{.tp = 2});
}

TEST(LoraLayout, PipelineParallel) {
  for (const char* family : {"llama", "gpt2"}) expect_same_trajectory(family, Layout{.pp = 2});
}

}  // namespace
}  // namespace parallm::lora_test

int main(int argc, char** argv) {
  return parallm::testing::run_training_dist_tests(argc, argv, parallm::lora_test::env(), "lora");
}
