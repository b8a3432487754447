// Entry of the pipeline-parallel MPI test binary (label dist): one
// MpiRuntime, a token shard per rank, the layout runner, gtest output from
// rank 0 plus every rank's failures; exits non-zero when any rank failed.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "common/layout_groups.h"
#include "common/mpi_gtest.h"
#include "common/trajectory_config.h"
#include "common/whole_parameters.h"
#include "grid/rank_grid.h"
#include "model/transformer.h"
#include "pp_env.h"
#include "train/trainer.h"

namespace parallm::pp_test {

PpTestEnv& env() {
  static PpTestEnv e;
  return e;
}

ModelConfig pp_gpt2() {
  ModelConfig c;
  c.vocab_size = 1003;
  c.hidden = 32;
  c.n_layers = 8;
  c.n_heads = c.n_kv_heads = 4;
  c.head_dim = 8;
  c.intermediate = 128;
  c.max_positions = 64;
  return c;
}

ModelConfig pp_llama() {
  ModelConfig c = pp_gpt2();
  c.arch = Arch::LLaMA;
  c.n_kv_heads = 2;
  c.intermediate = 96;
  c.tie_embeddings = false;
  return c;
}

std::string PpLayout::name() const {
  return fmt::format("pp {} tp {} dp {}{}{} {} V {} m {} {} {} recompute {}", pp, tp, dp,
                     sp ? " sp" : "", zero ? fmt::format(" zero {}", zero) : "", schedule,
                     virtual_stages, micro_batches, optimizer,
                     precision == Precision::FP32   ? "fp32"
                     : precision == Precision::BF16 ? "bf16"
                                                    : "fp16",
                     static_cast<int>(recompute));
}

PpRunResult pp_train_run(const ModelConfig& model, const PpLayout& l, int steps) {
  testing::LayoutGroups g =
      testing::split_layout(*env().world, {.tp = l.tp, .dp = l.dp, .pp = l.pp});
  if (!g.member) return {};
  TpGroup tp{.comm = l.tp > 1 ? g.tp.get() : nullptr, .sequence_parallel = l.sp};
  TrainConfig t = testing::trajectory_config(l.shard.empty() ? env().shard : l.shard, steps,
                                             l.optimizer, 1e-5);  // eps as the tp tests
  t.data.val = t.data.train;
  t.logging.eval_batches = 2;
  t.training.seq_len = l.seq_len;
  t.training.micro_batch_size = l.micro_batch_size;
  t.training.global_batch_size = l.micro_batch_size * l.micro_batches * l.dp;
  t.parallelism.dp.dp = l.dp;
  t.parallelism.dp.zero = l.zero;
  t.parallelism.dp.bucket_mb = 0.05;
  t.parallelism.tp = l.tp;
  t.parallelism.sequence_parallel = l.sp;
  t.parallelism.pp = l.pp;
  t.parallelism.schedule = l.schedule;
  t.parallelism.virtual_stages = l.virtual_stages;
  t.parallelism.pp_layers = l.pp_layers;
  t.precision.matmul = l.precision;
  t.training.recompute = l.recompute;
  Allocator alloc;
  Transformer m(model, alloc, tp, pipeline_stage(t, model, g.pp_rank));
  m.params().init_random(7);
  Trainer tr(m, t, alloc, 0.0, l.dp > 1 ? g.dp.get() : nullptr,
             PipelineGroups{l.pp > 1 ? g.pp.get() : nullptr, g.embedding.get()});
  PpRunResult res;
  res.ran = true;
  tr.run([&](const StepStats& s) {
    res.losses.push_back(s.loss);
    res.grad_norms.push_back(s.grad_norm);
    if (tr.logging_rank()) {
      res.bubble.push_back(s.bubble_fraction);
      res.bubble_replayed.push_back(s.bubble_fraction_replayed);
      res.peak_activation.push_back(s.stage_peak_activation_bytes);
    }
  });
  res.val_loss = tr.evaluate();
  res.params = testing::whole_parameters(tr, m.params(), tp);
  res.config = t;
  return res;
}

}  // namespace parallm::pp_test

int main(int argc, char** argv) {
  return parallm::testing::run_training_dist_tests(argc, argv, parallm::pp_test::env(), "pp");
}
