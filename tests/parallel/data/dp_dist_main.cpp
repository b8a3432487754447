// Entry of the data-parallel MPI test binary (label dist): one MpiRuntime,
// a token shard per rank, gtest output from rank 0 plus every rank's
// failures prefixed with its rank; exits non-zero when any rank failed.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <map>

#include "comm/mpi/mpi_runtime.h"
#include "common/mpi_gtest.h"
#include "common/named_flat.h"
#include "common/test_models.h"
#include "common/trajectory_config.h"
#include "dp_env.h"
#include "kernels/cpu/threads.h"
#include "model/transformer.h"
#include "train/trainer.h"

namespace parallm::dp_test {

DpTestEnv& env() {
  static DpTestEnv e;
  return e;
}

RunResult train_run(const ModelConfig& model, const DpOptions& dp, comm::Communicator* group,
                    int steps, const std::string& optimizer) {
  TrainConfig t = testing::trajectory_config(env().shard, steps, optimizer,
                                             1e-6);  // eps: see
                                                     // layout_invariance_dist.cpp
  t.parallelism.dp = dp;
  Allocator alloc;
  Transformer m(model, alloc);
  m.params().init_random(7);
  Trainer tr(m, t, alloc, 0.0, group);
  RunResult r;
  tr.run([&](const StepStats& s) {
    r.losses.push_back(s.loss);
    r.grad_norms.push_back(s.grad_norm);
    r.exposed_ms.push_back(s.exposed_comm_ms);
    r.comm_bytes.push_back(s.comm_bytes);
  });
  r.params = tr.data_parallel().full_parameters();
  r.config = t;
  return r;
}

std::string Layout::name() const {
  return fmt::format("{} zero {}{}", dp_mode_name(mode), zero, overlap ? "" : " no-overlap");
}

int steps_for(const std::string& optimizer) { return optimizer == "sgd" ? 8 : 20; }

const RunResult& reference_run(const std::string& family, const std::string& optimizer) {
  static std::map<std::string, RunResult> cache;
  const std::string key = family + "+" + optimizer;
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  ModelConfig m = family == "gpt2" ? testing::tiny_gpt2() : testing::tiny_llama();
  return cache[key] = train_run(m, DpOptions{}, nullptr, steps_for(optimizer), optimizer);
}

void expect_dp_trajectory(const ModelConfig& m, const RunResult& ref, const RunResult& got,
                          const std::string& what) {
  testing::Trajectory r{ref.losses, ref.grad_norms, testing::named_from_flat(m, ref.params)};
  testing::Trajectory g{got.losses, got.grad_norms, testing::named_from_flat(m, got.params)};
  testing::expect_same_trajectory(
      testing::run_arithmetic(ref.config, m, r, testing::element_count(r.params)), r, g, what);
}

void expect_layout_matches_one_process(const std::string& family, const Layout& l,
                                       const std::string& optimizer) {
  comm::Communicator* world = env().world;
  DpOptions o;
  o.dp = world->size();
  o.zero = l.zero;
  o.mode = l.mode;
  o.overlap = l.overlap;
  o.bucket_mb = 0.05;  // ~13k floats: several buckets, some inside one block
  ModelConfig m = family == "gpt2" ? testing::tiny_gpt2() : testing::tiny_llama();
  const RunResult& ref = reference_run(family, optimizer);
  RunResult got =
      train_run(m, o, world->size() > 1 ? world : nullptr, steps_for(optimizer), optimizer);
  const std::string what = fmt::format("{} {} dp {} {}", family, optimizer, o.dp, l.name());
  ASSERT_EQ(got.params.size(), ref.params.size()) << what;
  // The runs use AdamW eps 1e-6 (train_run): with 1e-8, exactly-zero
  // gradients (GPT-2's key bias) hold fp32 noise that Adam turns into
  // lr-sized updates of random sign in any two runs (docs/testing.md).
  expect_dp_trajectory(m, ref, got, what);
  if (world->size() > 1) {
    for (size_t s = 0; s < got.comm_bytes.size(); ++s)
      EXPECT_GT(got.comm_bytes[s], 0) << what << ", step " << s;
  }
}
}  // namespace parallm::dp_test

int main(int argc, char** argv) {
  return parallm::testing::run_training_dist_tests(argc, argv, parallm::dp_test::env(), "dp");
}
