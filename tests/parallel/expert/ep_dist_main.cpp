// Entry of the expert-parallel MPI test binary (label dist) and its
// training helper: the grid's ep and expert-dp groups split from the world,
// the model built with the ep group, DDP over dp with expert gradients over
// expert-dp; parameters gathered back to the one-process layout by name.
#include <gtest/gtest.h>

#include "common/mpi_gtest.h"
#include "common/trajectory_config.h"
#include "ep_env.h"
#include "grid/rank_grid.h"
#include "model/transformer.h"
#include "train/trainer.h"

namespace parallm::ep_test {

EpTestEnv& env() {
  static EpTestEnv e;
  return e;
}

namespace {

// The whole parameter vector in the one-process layout: expert tensors
// (split along dimension 0 over ep) gathered over the ep group.
std::vector<float> whole_parameters(const Transformer& m, comm::Communicator* ep) {
  Allocator alloc;
  const Transformer one(m.config(), alloc);
  const ParameterSet& ps = m.params();
  const ParameterSet& full = one.params();
  std::vector<float> out(full.total_numel());
  for (int i = 0; i < ps.size(); ++i) {
    const ParamSpec& spec = ps.spec(i);
    const float* v = ps.flat_values().data<float>() + ps.offset(i);
    const int j = full.find(spec.name);
    float* dst = out.data() + full.offset(j);
    if (spec.shard_dim == 0 && ep != nullptr) {
      ep->all_gather(v, dst, static_cast<size_t>(ps.numel(i)), DType::F32);
    } else {
      std::copy(v, v + ps.numel(i), dst);
    }
  }
  return out;
}

}  // namespace

RunResult train_run(const ModelConfig& model, int ep, int steps) {
  comm::Communicator* world = env().world;
  const bool one = ep == 0;
  TrainConfig t = testing::trajectory_config(env().shard, steps, "adamw", 1e-6);
  const int dp = one ? 1 : world->size();
  t.parallelism.dp.dp = dp;
  t.parallelism.ep = one ? 1 : ep;
  t.parallelism.dp.bucket_mb = 0.05;  // several buckets, some cut by expert ranges
  std::unique_ptr<comm::Communicator> ep_comm, edp_comm;
  if (!one) {
    const RankGrid grid(GridSizes{.dp = dp, .ep = ep}, world->size());
    const int r = world->rank();
    ep_comm = world->split(grid.group_index(GroupKind::Ep, r), grid.rank_in_group(GroupKind::Ep, r),
                           "ep");
    edp_comm = world->split(grid.group_index(GroupKind::Edp, r),
                            grid.rank_in_group(GroupKind::Edp, r), "edp");
  }
  Allocator alloc;
  Transformer m(model, alloc, {}, {}, EpGroup{.comm = ep > 1 ? ep_comm.get() : nullptr});
  m.params().init_random(7);
  Trainer tr(m, t, alloc, 0.0, one ? nullptr : world, {}, edp_comm.get());
  RunResult res;
  tr.run([&](const StepStats& s) {
    res.losses.push_back(s.loss);
    res.grad_norms.push_back(s.grad_norm);
    res.aux_losses.push_back(s.moe_aux_loss);
    res.z_losses.push_back(s.moe_z_loss);
    res.dropped.push_back(s.moe_dropped);
    res.expert_loads.push_back(s.moe_expert_load);
  });
  res.params = whole_parameters(m, ep > 1 ? ep_comm.get() : nullptr);
  return res;
}

}  // namespace parallm::ep_test

int main(int argc, char** argv) {
  return parallm::testing::run_training_dist_tests(argc, argv, parallm::ep_test::env(), "ep");
}
