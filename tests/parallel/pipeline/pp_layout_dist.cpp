// Layout invariance of pipeline parallelism (DESIGN principle 1): for pp in
// {2, 4}, every schedule (GPipe, 1F1B, interleaved with 2 virtual stages,
// ZB-H1, DualPipeV at m = 2pp+1, its least m being 2pp) and micro-batches
// m in {1, pp, 2pp+1}, alone and combined with tp 2
// (sequence parallel on) and dp 2 up to the world size, 10 training steps
// follow the one-process run on the same global batch: per-step losses and
// gradient norms, the evaluation loss after training (forwards only through
// the stages), and every parameter this rank holds (the last stage's
// copy of GPT-2's tied token table included), within the bounds
// docs/testing.md derives (common/trajectory_match.h). The
// interleaved schedule takes only m divisible by pp (Megatron's rule), so
// it runs at m = pp and rejects 1 and 2pp+1 up front (checked below).
// Combined with tp 2 / dp 2 every schedule runs at every m too. Every layout
// also runs 4 steps of plain SGD (lr 0.1): Adam's update ignores a gradient
// off by a constant factor per element (a micro-batch scaled 1/m twice, a
// tied table's two halves not summed), SGD's moves by it.
#include <gtest/gtest.h>

#include <cmath>
#include <tuple>

#include "base/error.h"
#include "common/trajectory_match.h"
#include "pp_env.h"
#include "train/pipeline_step.h"

namespace parallm::pp_test {
namespace {

// The one-process run on the same global batch (micro-batches of the same size).
// "gpt2", "llama", or "llama-kv1" (one key/value group: tp 2 replicates it).
ModelConfig family_model(const std::string& family) {
  if (family == "gpt2") return pp_gpt2();
  ModelConfig m = pp_llama();
  if (family == "llama-kv1") m.n_kv_heads = 1;
  return m;
}

// SGD: 4 steps, enough for a wrong scale to move the parameters from the
// first update on while keeping the doubled layout list short.
int steps_for(const std::string& optimizer) { return optimizer == "sgd" ? 4 : 10; }

const PpRunResult& reference(const std::string& family, int64_t micro_batch_size,
                             int global_micro_batches, const std::string& optimizer) {
  static std::map<std::tuple<std::string, int64_t, int, std::string>, PpRunResult> cache;
  const auto key = std::make_tuple(family, micro_batch_size, global_micro_batches, optimizer);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  PpLayout one;
  one.micro_batch_size = micro_batch_size;
  one.micro_batches = global_micro_batches;
  one.optimizer = optimizer;
  return cache[key] = pp_train_run(family_model(family), one, steps_for(optimizer));
}

void expect_same_trajectory(const std::string& family, const PpLayout& l) {
  const PpRunResult& ref =
      reference(family, l.micro_batch_size, l.micro_batches * l.dp, l.optimizer);
  PpRunResult got = pp_train_run(family_model(family), l, steps_for(l.optimizer));
  if (!got.ran) return;  // not in this layout
  const std::string what = family + " " + l.name();
  // This rank's parameters against the same names in the one-process model
  // (a stage holds a subset; padded vocabulary rows skipped).
  const testing::Trajectory r = testing::trajectory_of(ref);
  const RunArithmetic run = testing::run_arithmetic(ref.config, family_model(family), r,
                                                    testing::element_count(r.params));
  const TrajectoryBounds b =
      testing::expect_same_trajectory(run, r, testing::trajectory_of(got), what,
                                      /*names_from_got=*/true);
  testing::expect_eval_loss_match(b, ref.config, ref.grad_norms.back(), ref.val_loss, got.val_loss,
                                  what);
}

// Every (schedule, m) a pipeline of pp stages runs: m in {1, pp, 2pp+1},
// interleaved (V = 2) only at m = pp, DualPipeV (its own 2 chunks) only at
// 2pp+1.
std::vector<PpLayout> schedules_for(PpLayout base) {
  std::vector<PpLayout> out;
  for (const char* s : {"gpipe", "1f1b", "zb", "interleaved", "dualpipev"})
    for (int m : {1, base.pp, 2 * base.pp + 1}) {
      const bool interleaved = std::string(s) == "interleaved";
      if (interleaved && m % base.pp != 0) continue;
      if (std::string(s) == "dualpipev" && m < 2 * base.pp) continue;
      PpLayout l = base;
      l.schedule = s;
      l.micro_batches = m;
      l.virtual_stages = interleaved ? 2 : 1;
      out.push_back(l);
    }
  return out;
}

// The grids pp x tp x dp of this world size with pp in {2, 4}.
std::vector<PpLayout> grids_for(int world) {
  std::vector<PpLayout> out;
  for (int pp : {2, 4})
    for (int tp : {1, 2})
      for (int dp : {1, 2})
        if (pp * tp * dp == world)
          out.push_back(PpLayout{.pp = pp, .tp = tp, .dp = dp, .sp = tp > 1});
  return out;
}

TEST(PipelineLayout, Gpt2MatchesOneProcess) {
  for (const PpLayout& g : grids_for(env().world->size()))
    for (const PpLayout& l : schedules_for(g)) expect_same_trajectory("gpt2", l);
}

TEST(PipelineLayout, LlamaMatchesOneProcess) {
  for (const PpLayout& g : grids_for(env().world->size()))
    for (const PpLayout& l : schedules_for(g)) expect_same_trajectory("llama", l);
}

TEST(PipelineLayout, SgdMatchesOneProcess) {
  for (const char* family : {"gpt2", "llama"})
    for (PpLayout g : grids_for(env().world->size())) {
      g.optimizer = "sgd";
      for (const PpLayout& l : schedules_for(g)) expect_same_trajectory(family, l);
    }
}

// tp without sequence parallelism, and ZeRO-1 over the dp group of a stage;
// ZB-H1 with a key/value head replicated over tp (its dW stays in B).
TEST(PipelineLayout, TpWithoutSpAndZero1) {
  if (env().world->size() != 4) GTEST_SKIP() << "runs at np 4";
  for (const char* opt : {"adamw", "sgd"}) {
    expect_same_trajectory(
        "llama-kv1",
        PpLayout{.pp = 2, .tp = 2, .schedule = "zb", .micro_batches = 3, .optimizer = opt});
    for (const char* family : {"gpt2", "llama"}) {
      expect_same_trajectory(
          family,
          PpLayout{.pp = 2, .tp = 2, .schedule = "zb", .micro_batches = 2, .optimizer = opt});
      expect_same_trajectory(family, PpLayout{.pp = 2,
                                              .dp = 2,
                                              .zero = 1,
                                              .schedule = "1f1b",
                                              .micro_batches = 3,
                                              .optimizer = opt});
    }
  }
}

// Uneven stages (--pp-layers) follow the same trajectory.
TEST(PipelineLayout, UnevenStagesMatchOneProcess) {
  const int world = env().world->size();
  if (world != 2 && world != 4) GTEST_SKIP() << "runs at np 2 and 4";
  PpLayout l{.pp = world, .schedule = "1f1b", .micro_batches = world + 1};
  l.pp_layers = world == 2 ? "5,3" : "1,3,3,1";
  expect_same_trajectory("gpt2", l);
  l.optimizer = "sgd";
  expect_same_trajectory("gpt2", l);
}

// What the trainer rejects before building anything, with the values.
TEST(PipelineLayout, RejectsImpossibleLayouts) {
  TrainConfig t;
  t.data.train = {"x"};
  t.parallelism.pp = 4;
  t.training.micro_batch_size = 1;
  t.training.global_batch_size = 9;
  t.parallelism.schedule = "interleaved";
  t.parallelism.virtual_stages = 2;
  t.training.seq_len = 16;
  auto message = [&](const ModelConfig& m) {
    try {
      t.validate(m);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(message(pp_gpt2()).find("divisible by pp (4)"), std::string::npos)
      << message(pp_gpt2());
  t.training.global_batch_size = 8;
  ModelConfig small = pp_gpt2();
  small.n_layers = 6;
  EXPECT_NE(message(small).find("cannot split 6 layers into 4 stages x 2 chunks"),
            std::string::npos)
      << message(small);
  t.parallelism.schedule = "1f1b";
  t.parallelism.virtual_stages = 1;
  t.parallelism.pp_layers = "2,2,2,1";
  EXPECT_NE(message(pp_gpt2()).find("sums to 7 layers, but the model has 8"), std::string::npos)
      << message(pp_gpt2());
  t.parallelism.pp_layers = "";
  t.parallelism.dp.zero = 2;
  EXPECT_NE(message(pp_gpt2()).find("ZeRO stage 2 with pp 4"), std::string::npos);
  t.parallelism.dp.zero = 0;
  t.parallelism.schedule = "zb2";
  EXPECT_NE(message(pp_gpt2()).find("unknown pipeline schedule 'zb2'"), std::string::npos);
  t.parallelism.schedule = "gpipe";
  EXPECT_EQ(message(pp_gpt2()), "");
}

}  // namespace
}  // namespace parallm::pp_test
