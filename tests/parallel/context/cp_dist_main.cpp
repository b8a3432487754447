// Entry of the context-parallel MPI test binary (label dist): one
// MpiRuntime, a token shard per rank, the layout runner (cp x tp x dp on
// the grid's groups, gradients reduced over dp x cp), gtest output from
// rank 0 plus every rank's failures; exits non-zero when any rank failed.
#include <fmt/format.h>

#include "common/mpi_gtest.h"
#include "common/trajectory_config.h"
#include "common/whole_parameters.h"
#include "cp_env.h"
#include "grid/rank_grid.h"
#include "model/transformer.h"
#include "parallel/context/cp_group.h"
#include "train/pipeline_step.h"
#include "train/trainer.h"

namespace parallm::cp_test {

CpTestEnv& env() {
  static CpTestEnv e;
  return e;
}

std::string CpLayout::name() const {
  return fmt::format(
      "cp {} {}{} tp {} sp {} dp {} zero {} pp {}{} seq {} recompute {}{}{}", cp, comm,
      ulysses ? fmt::format(" U {}", ulysses) : std::string(), tp, sp ? "on" : "off", dp, zero, pp,
      pp > 1 ? fmt::format(" {} v {}", schedule, virtual_stages) : std::string(), seq_len,
      recompute_name(recompute), packed ? " packed" : "",
      precision == Precision::FP32 ? std::string() : fmt::format(" {}", precision_name(precision)));
}

CpRunResult cp_train_run(const ModelConfig& model, const CpLayout& l, int steps) {
  comm::Communicator& world = *env().world;
  const GridSizes sizes{.tp = l.tp, .cp = l.cp, .dp = l.dp, .pp = l.pp};
  const int n = static_cast<int>(sizes.world_size());
  std::unique_ptr<comm::Communicator> layout, tp_comm, cp_comm, red, pp_comm, embedding;
  int pp_rank = 0;
  if (n > 1) {
    const bool member = world.rank() < n;
    layout = world.split(member ? 0 : -1, world.rank(), "layout");
    if (!member) return {};
    const RankGrid grid(sizes, n);
    const int r = layout->rank();
    auto split = [&](GroupKind k, const char* name) {
      return layout->split(grid.group_index(k, r), grid.rank_in_group(k, r), name);
    };
    tp_comm = split(GroupKind::Tp, "tp");
    cp_comm = split(GroupKind::Cp, "cp");
    red = split(GroupKind::DpCp, "dp_cp");
    pp_comm = split(GroupKind::Pp, "pp");
    embedding = split(GroupKind::Embedding, "embedding");
    pp_rank = grid.coord(r).pp_rank;
  }
  TpGroup tp{.comm = l.tp > 1 ? tp_comm.get() : nullptr, .sequence_parallel = l.sp};
  CpGroup cp{.comm = l.cp > 1 ? cp_comm.get() : nullptr, .mode = cp_comm_from_name(l.comm)};
  cp.ulysses_degree = ulysses_degree_for(cp.mode, l.cp, l.ulysses);
  const CpSubgroups subgroups = make_cp_subgroups(cp);
  // Adam's eps 1e-5 as the tp tests (tests/parallel/tensor/tp_dist_main.cpp says why).
  TrainConfig t = testing::trajectory_config(env().shard, steps, "adamw", 1e-5);
  t.training.seq_len = l.seq_len;
  t.parallelism.dp.dp = l.dp;
  t.parallelism.dp.zero = l.zero;
  t.parallelism.dp.bucket_mb = 0.05;
  t.parallelism.tp = l.tp;
  t.parallelism.sequence_parallel = l.sp;
  t.parallelism.cp = l.cp;
  t.parallelism.cp_comm = l.comm;
  t.parallelism.ulysses_degree = l.ulysses;
  t.data.val = t.data.train;
  t.logging.eval_batches = 2;
  t.training.global_batch_size = l.global_batch;
  t.training.recompute = l.recompute;
  t.parallelism.pp = l.pp;
  t.parallelism.schedule = l.schedule;
  t.parallelism.virtual_stages = l.virtual_stages;
  t.precision.matmul = l.precision;
  if (l.packed)
    t.data.docs = {.reset_attention_mask = true,
                   .reset_position_ids = true,
                   .eod_mask_loss = true,
                   .eod = kPackedEod};
  Allocator alloc;
  Transformer m(model, alloc, tp, pipeline_stage(t, model, pp_rank), {}, cp);
  m.params().init_random(7);
  Trainer tr(m, t, alloc, 0.0, l.cp * l.dp > 1 ? red.get() : nullptr,
             PipelineGroups{l.pp > 1 ? pp_comm.get() : nullptr, embedding.get()});
  CpRunResult res;
  tr.run([&](const StepStats& s) {
    res.losses.push_back(s.loss);
    res.grad_norms.push_back(s.grad_norm);
    res.cp_comm_ms.push_back(s.cp_comm_ms);
    res.cp_bytes.push_back(s.cp_comm_bytes);
    res.loss_scales.push_back(s.loss_scale);
    res.skipped.push_back(s.skipped);
  });
  res.val_loss = tr.evaluate();
  res.params = testing::whole_parameters(tr, m.params(), tp);
  res.config = t;
  return res;
}

}  // namespace parallm::cp_test

int main(int argc, char** argv) {
  return parallm::testing::run_training_dist_tests(argc, argv, parallm::cp_test::env(), "cp");
}
