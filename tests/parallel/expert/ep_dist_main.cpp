// Entry of the expert-parallel MPI test binary (label dist) and its
// training helper: the grid's ep and expert-dp groups split from the world,
// the model built with the ep group, DDP over dp with expert gradients over
// expert-dp; parameters gathered back to the one-process layout by name.
#include <gtest/gtest.h>

#include <algorithm>

#include "base/error.h"
#include "common/mpi_gtest.h"
#include "common/trajectory_config.h"
#include "ep_env.h"
#include "grid/rank_grid.h"
#include "model/transformer.h"
#include "parallel/tensor/gather_parameters.h"
#include "train/pipeline_step.h"
#include "train/trainer.h"

namespace parallm::ep_test {

EpTestEnv& env() {
  static EpTestEnv e;
  return e;
}

namespace {

// The whole parameter vector in the one-process layout: tp shards gathered
// over tp (experts are whole on every tp rank), expert tensors (split along
// dimension 0 over ep) gathered over the ep group. A pipeline stage holds a
// subset of the names: `held` (when given) marks the elements it filled
// (and the alignment gaps between tensors, zero in every layout).
// `local`: this rank's flat values (DataParallel::full_parameters: ZeRO-3
// gathers them from their owners).
std::vector<float> whole_parameters(const Transformer& m, const std::vector<float>& local,
                                    const TpGroup& tp, comm::Communicator* ep,
                                    std::vector<uint8_t>* held) {
  Allocator alloc;
  const Transformer one(m.config(), alloc);
  const ParameterSet& ps = m.params();
  const ParameterSet& full = one.params();
  std::vector<float> out(full.total_numel());
  if (held != nullptr) {  // the alignment gaps between tensors: zero on both sides
    held->assign(out.size(), 1);
    for (int j = 0; j < full.size(); ++j)
      std::fill_n(held->begin() + full.offset(j), full.numel(j), uint8_t{0});
  }
  for (int i = 0; i < ps.size(); ++i) {
    const ParamSpec& spec = ps.spec(i);
    const std::vector<float> v = gather_tp_parameter(ps, i, local.data() + ps.offset(i), tp);
    const int j = full.find(spec.name);
    PX_CHECK(j >= 0, "parameter {} of this stage is not in the one-process model", spec.name);
    float* dst = out.data() + full.offset(j);
    if (spec.expert && spec.shard_dim == 0 && ep != nullptr) {
      ep->all_gather(v.data(), dst, v.size(), DType::F32);
    } else {
      // A padded vocabulary's rows past the model's are not compared.
      std::copy(v.begin(), v.begin() + full.numel(j), dst);
    }
    if (held != nullptr) std::fill_n(held->begin() + full.offset(j), full.numel(j), uint8_t{1});
  }
  return out;
}

}  // namespace

RunResult train_run(const ModelConfig& model, int ep, int steps, int zero) {
  if (ep == 0) return train_layout(model, Layout{.ep = 0}, steps);
  return train_layout(model, Layout{.ep = ep, .zero = zero}, steps);
}

RunResult train_layout(const ModelConfig& model, const Layout& layout, int steps) {
  comm::Communicator* world = env().world;
  const bool one = layout.ep == 0;
  TrainConfig t = testing::trajectory_config(env().shard, steps, "adamw", 1e-6);
  const int tp = one ? 1 : layout.tp;
  const int pp = one ? 1 : layout.pp;
  const int dp = one ? 1 : world->size() / (tp * pp);
  const int ep = one ? 1 : layout.ep;
  t.parallelism.dp.dp = dp;
  t.parallelism.ep = ep;
  t.parallelism.tp = tp;
  t.parallelism.pp = pp;
  t.parallelism.sequence_parallel = !one && layout.sp;
  t.parallelism.dp.bucket_mb = 0.05;  // several buckets, some cut by expert ranges
  t.parallelism.dp.zero = one ? 0 : layout.zero;
  if (layout.micro > 0) t.training.micro_batch_size = layout.micro;
  if (layout.global > 0) t.training.global_batch_size = layout.global;
  t.precision.matmul = layout.precision;
  std::unique_ptr<comm::Communicator> tp_comm, dp_comm, ep_comm, edp_comm, pp_comm, emb_comm;
  int pp_rank = 0;
  if (!one) {
    const RankGrid grid(GridSizes{.tp = tp, .dp = dp, .pp = pp, .ep = ep}, world->size());
    const int r = world->rank();
    auto split = [&](GroupKind k, const char* name) {
      return world->split(grid.group_index(k, r), grid.rank_in_group(k, r), name);
    };
    tp_comm = split(GroupKind::Tp, "tp");
    dp_comm = split(GroupKind::Dp, "dp");
    ep_comm = split(GroupKind::Ep, "ep");
    edp_comm = split(GroupKind::Edp, "edp");
    if (pp > 1) {
      pp_comm = split(GroupKind::Pp, "pp");
      emb_comm = split(GroupKind::Embedding, "embedding");
      pp_rank = grid.coord(r).pp_rank;
    }
  }
  const TpGroup tpg{.comm = tp > 1 ? tp_comm.get() : nullptr,
                    .sequence_parallel = t.parallelism.sequence_parallel};
  Allocator alloc;
  Transformer m(model, alloc, tpg, pipeline_stage(t, model, pp_rank),
                EpGroup{.comm = ep > 1 ? ep_comm.get() : nullptr});
  m.params().init_random(7);
  Trainer tr(m, t, alloc, 0.0, dp > 1 ? dp_comm.get() : nullptr,
             PipelineGroups{pp_comm.get(), emb_comm.get()}, edp_comm.get());
  RunResult res;
  tr.run([&](const StepStats& s) {
    res.losses.push_back(s.loss);
    res.grad_norms.push_back(s.grad_norm);
    res.aux_losses.push_back(s.moe_aux_loss);
    res.z_losses.push_back(s.moe_z_loss);
    res.dropped.push_back(s.moe_dropped);
    res.expert_loads.push_back(s.moe_expert_load);
    res.ep_comm_ms.push_back(s.ep_comm_ms);
  });
  res.params = whole_parameters(m, tr.data_parallel().full_parameters(), tpg,
                                ep > 1 ? ep_comm.get() : nullptr, pp > 1 ? &res.held : nullptr);
  if (pp > 1) {  // every element must be held by some stage of this pipeline
    std::vector<float> count(res.held.begin(), res.held.end());
    pp_comm->all_reduce(count.data(), count.size(), DType::F32, comm::ReduceOp::Sum);
    res.unheld_by_pipeline = std::count(count.begin(), count.end(), 0.0f);
  }
  res.expert_bias = m.expert_bias().values();
  res.model = model;
  res.config = t;
  return res;
}

}  // namespace parallm::ep_test

int main(int argc, char** argv) {
  return parallm::testing::run_training_dist_tests(argc, argv, parallm::ep_test::env(), "ep");
}
