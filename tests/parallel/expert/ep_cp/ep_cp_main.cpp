// Entry of the MoE context-parallel MPI test binary (label dist) and its
// training helper: the grid's tp, cp, dp x cp, ep and expert-dp groups
// split from the world, the model built with the cp and ep groups, dense
// gradients summed over dp x cp and expert gradients over expert-dp (as
// train_job does); parameters gathered back to the one-process layout.
#include <gtest/gtest.h>

#include "base/error.h"
#include "common/mpi_gtest.h"
#include "common/trajectory_config.h"
#include "ep_cp_env.h"
#include "grid/rank_grid.h"
#include "model/transformer.h"
#include "parallel/context/cp_group.h"
#include "parallel/tensor/gather_parameters.h"
#include "train/pipeline_step.h"
#include "train/trainer.h"

namespace parallm::ep_cp_test {

EpCpTestEnv& env() {
  static EpCpTestEnv e;
  return e;
}

std::string CpMoeLayout::name() const {
  return fmt::format("cp {} ({}) x tp {}{} x dp {}, ep {}, expert tp {}{}, micro-batch {}", cp,
                     comm, tp, sp ? " + sp" : "", dp, ep, expert_tp,
                     zero ? fmt::format(", ZeRO-{}", zero) : "", micro);
}

namespace {

// The whole parameter vector in the one-process layout (tp shards gathered
// over tp, experts too under expert tp; experts, split along dimension 0
// over ep, gathered over ep).
std::vector<float> whole_parameters(const Transformer& m, const TpGroup& tp,
                                    comm::Communicator* ep) {
  Allocator alloc;
  const Transformer one(m.config(), alloc);
  const ParameterSet& ps = m.params();
  const ParameterSet& full = one.params();
  std::vector<float> out(full.total_numel());
  for (int i = 0; i < ps.size(); ++i) {
    const ParamSpec& spec = ps.spec(i);
    const std::vector<float> v =
        gather_tp_parameter(ps, i, ps.flat_values().data<float>() + ps.offset(i), tp);
    const int j = full.find(spec.name);
    PX_CHECK(j >= 0, "parameter {} is not in the one-process model", spec.name);
    float* dst = out.data() + full.offset(j);
    if (spec.expert && spec.shard_dim == 0 && ep != nullptr)
      ep->all_gather(v.data(), dst, v.size(), DType::F32);
    else
      std::copy(v.begin(), v.begin() + full.numel(j), dst);
  }
  return out;
}

}  // namespace

ep_test::RunResult train_cp_layout(const ModelConfig& model, const CpMoeLayout& l, int steps) {
  comm::Communicator* world = env().world;
  const GridSizes sizes{.tp = l.tp, .cp = l.cp, .dp = l.dp, .ep = l.ep};
  const bool one = sizes.world_size() == 1;
  PX_CHECK(one || sizes.world_size() == world->size(), "layout {} needs {} ranks, the world has {}",
           l.name(), sizes.world_size(), world->size());
  // Adam's eps 1e-5 as the cp and tp layout tests (tp_dist_main.cpp says
  // why): at 1e-6 single elements whose gradient nearly cancels in a step
  // (an attention output weight, an embedding row) ended up to 1e-4 relative
  // from one process under cp x ep 2 while losses, grad norms, loads and the
  // parameters' relative distance agreed.
  TrainConfig t = testing::trajectory_config(env().shard, steps, "adamw", 1e-5);
  t.training.micro_batch_size = l.micro;
  t.training.global_batch_size = l.global;
  t.parallelism.tp = l.tp;
  t.parallelism.sequence_parallel = l.sp;
  t.parallelism.cp = l.cp;
  t.parallelism.cp_comm = l.comm;
  t.parallelism.dp.dp = l.dp;
  t.parallelism.ep = l.ep;
  t.parallelism.expert_tp = l.expert_tp;
  t.parallelism.dp.zero = l.zero;
  t.parallelism.dp.bucket_mb = 0.05;  // several buckets, some cut by expert ranges
  t.validate(model, static_cast<int>(sizes.world_size()));
  std::unique_ptr<comm::Communicator> tp_comm, cp_comm, red, ep_comm, edp_comm;
  if (!one) {
    const RankGrid grid(sizes, world->size());
    const int r = world->rank();
    auto split = [&](GroupKind k, const char* name) {
      return world->split(grid.group_index(k, r), grid.rank_in_group(k, r), name);
    };
    tp_comm = split(GroupKind::Tp, "tp");
    cp_comm = split(GroupKind::Cp, "cp");
    red = split(GroupKind::DpCp, "dp_cp");
    ep_comm = split(GroupKind::Ep, "ep");
    edp_comm = split(GroupKind::Edp, "edp");
  }
  const TpGroup tp{.comm = l.tp > 1 ? tp_comm.get() : nullptr, .sequence_parallel = l.sp};
  CpGroup cp{.comm = l.cp > 1 ? cp_comm.get() : nullptr, .mode = cp_comm_from_name(l.comm)};
  cp.ulysses_degree = ulysses_degree_for(cp.mode, l.cp, 0);
  const CpSubgroups subgroups = make_cp_subgroups(cp);
  const EpGroup ep{.comm = l.ep > 1 ? ep_comm.get() : nullptr, .split_over_tp = l.expert_tp > 1};
  Allocator alloc;
  Transformer m(model, alloc, tp, pipeline_stage(t, model, 0), ep, cp);
  m.params().init_random(7);
  // Under expert tp every expert weight holds 1/tp of its features.
  for (int i = 0; i < m.params().size() && l.expert_tp > 1; ++i) {
    const ParamSpec& s = m.params().spec(i);
    if (!s.expert || s.name.ends_with("proj.bias")) continue;
    EXPECT_GE(s.tp_dim, 1) << s.name << " is not split over tp";
    if (s.tp_dim >= 1) {
      EXPECT_EQ(s.shape[s.tp_dim] * l.tp, s.global_shape[s.tp_dim]) << s.name;
    }
  }
  Trainer tr(m, t, alloc, 0.0, l.cp * l.dp > 1 ? red.get() : nullptr, PipelineGroups{},
             l.ep > 1 ? edp_comm.get() : nullptr);
  ep_test::RunResult res;
  tr.run([&](const StepStats& s) {
    res.losses.push_back(s.loss);
    res.grad_norms.push_back(s.grad_norm);
    res.aux_losses.push_back(s.moe_aux_loss);
    res.z_losses.push_back(s.moe_z_loss);
    res.dropped.push_back(s.moe_dropped);
    res.expert_loads.push_back(s.moe_expert_load);
    res.ep_comm_ms.push_back(s.ep_comm_ms);
  });
  res.params = whole_parameters(m, tp, l.ep > 1 ? ep_comm.get() : nullptr);
  res.expert_bias = m.expert_bias().values();
  res.model = model;
  res.config = t;
  return res;
}

}  // namespace parallm::ep_cp_test

int main(int argc, char** argv) {
  return parallm::testing::run_training_dist_tests(argc, argv, parallm::ep_cp_test::env(), "epcp");
}
