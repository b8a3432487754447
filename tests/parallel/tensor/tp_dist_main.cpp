// Entry of the tensor-parallel MPI test binary (label dist): one MpiRuntime,
// a token shard per rank, the layout runner, gtest output from rank 0 plus
// every rank's failures prefixed with its rank; exits non-zero when any
// rank failed.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "comm/mpi/mpi_runtime.h"
#include "common/layout_groups.h"
#include "common/mpi_gtest.h"
#include "common/trajectory_config.h"
#include "common/whole_parameters.h"
#include "grid/rank_grid.h"
#include "kernels/cpu/threads.h"
#include "model/transformer.h"
#include "tp_env.h"
#include "train/trainer.h"

namespace parallm::tp_test {

TpTestEnv& env() {
  static TpTestEnv e;
  return e;
}

std::string TpLayout::name() const {
  return fmt::format("tp {} dp {} sp {} zero {} {}", tp, dp, sp ? "on" : "off", zero, optimizer);
}

TpRunResult tp_train_run(const ModelConfig& model, const TpLayout& l, int steps) {
  testing::LayoutGroups g = testing::split_layout(*env().world, {.tp = l.tp, .dp = l.dp});
  if (!g.member) return {};
  TpGroup tp{.comm = l.tp > 1 ? g.tp.get() : nullptr, .sequence_parallel = l.sp};
  // Adam divides by sqrt(v) + eps, so an element whose gradient nearly
  // cancels in some step (|g| ~ eps) turns fp32 summation noise into an
  // update difference of up to lr (docs/testing.md). At eps 1e-6 two such
  // elements showed up here, each a one-step jump: pos_embed[0][29] of
  // GPT-2 with dropout (tp 2, step 1) and embed[869][49] of the multi-query
  // LLaMA (tp 4, step 4). eps 1e-5 keeps Adam's gain on such elements 10x
  // lower.
  TrainConfig t = testing::trajectory_config(env().shard, steps, l.optimizer, 1e-5);
  t.parallelism.dp.dp = l.dp;
  t.parallelism.dp.zero = l.zero;
  t.parallelism.dp.bucket_mb = 0.05;
  t.parallelism.tp = l.tp;
  t.parallelism.sequence_parallel = l.sp;
  t.precision.matmul = l.precision;
  t.training.recompute = l.recompute;
  t.precision.loss_scale = l.loss_scale;
  Allocator alloc;
  Transformer m(model, alloc, tp);
  m.params().init_random(7);
  Trainer tr(m, t, alloc, 0.0, l.dp > 1 ? g.dp.get() : nullptr);
  TpRunResult res;
  tr.run([&](const StepStats& s) {
    res.losses.push_back(s.loss);
    res.grad_norms.push_back(s.grad_norm);
    res.tp_bytes.push_back(s.tp_comm_bytes);
    res.sp_bytes.push_back(s.sp_comm_bytes);
    res.tp_comm_ms.push_back(s.tp_comm_ms);
    res.loss_scales.push_back(s.loss_scale);
    res.skipped.push_back(s.skipped);
  });
  res.params = testing::whole_parameters(tr, m.params(), tp);
  res.config = t;
  return res;
}
}  // namespace parallm::tp_test

int main(int argc, char** argv) {
  return parallm::testing::run_training_dist_tests(argc, argv, parallm::tp_test::env(), "tp");
}
