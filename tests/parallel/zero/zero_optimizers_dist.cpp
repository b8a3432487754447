// Every optimizer on a few layouts (DDP, ZeRO-1 and -3, the parameter
// server), 8 steps, against its own one-process run: LLaMA for all, GPT-2
// too for Muon. Under ZeRO Muon sums each matrix's update over the ranks
// owning its parts; the shards cut GPT-2's fc (np 2, 4) and proj (np 3) and
// LLaMA's gate and down (np 3), which the test checks so it keeps covering
// that. Built into the data-parallel binary (tests/parallel/data/tests.cmake).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "common/test_models.h"
#include "dp_env.h"
#include "model/transformer.h"
#include "optim/muon.h"
#include "parallel/data/shard_layout.h"

namespace parallm::dp_test {
namespace {

int cut_matrices(const ModelConfig& cfg, int dp) {
  Allocator alloc;
  Transformer m(cfg, alloc);
  const ParameterSet& ps = m.params();
  const ShardLayout shards{ps.total_numel(), dp};
  int cut = 0;
  for (int i = 0; i < ps.size(); ++i) {
    if (!Muon::is_matrix(ps.spec(i))) continue;
    for (int r = 1; r < dp; ++r)
      if (shards.begin(r) > ps.offset(i) && shards.begin(r) < ps.offset(i) + ps.numel(i)) ++cut;
  }
  return cut;
}

TEST(ZeroLayout, OptimizersMatchOneProcess) {
  comm::Communicator* world = env().world;
  if (world->size() > 1) {
    EXPECT_GT(cut_matrices(testing::tiny_gpt2(), world->size()), 0) << "no Muon matrix is cut";
  }
  for (const char* opt : {"momentum", "adam", "muon"}) {  // sgd: SgdMatchesOneProcess
    for (const char* family : {"llama", "gpt2"}) {
      if (std::string(family) == "gpt2" && std::string(opt) != "muon") continue;
      const ModelConfig m =
          std::string(family) == "gpt2" ? testing::tiny_gpt2() : testing::tiny_llama();
      const RunResult ref = train_run(m, DpOptions{}, nullptr, 8, opt);
      for (Layout l :
           {Layout{0, DpMode::AllReduce, true}, Layout{1, DpMode::AllReduce, true},
            Layout{3, DpMode::AllReduce, true}, Layout{0, DpMode::ParameterServer, true}}) {
        DpOptions o;
        o.dp = world->size();
        o.zero = l.zero;
        o.mode = l.mode;
        o.bucket_mb = 0.05;
        RunResult got = train_run(m, o, world->size() > 1 ? world : nullptr, 8, opt);
        const std::string what = fmt::format("{} {} dp {} {}", family, opt, o.dp, l.name());
        expect_dp_trajectory(m, ref, got, what);
      }
    }
  }
}

}  // namespace
}  // namespace parallm::dp_test
