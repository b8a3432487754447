// Layout invariance of data parallelism (DESIGN principle 1): over the world
// (dp = number of ranks), DDP with and without overlap, ZeRO-1, ZeRO-2, ZeRO-3 and
// the parameter server, with gradient accumulation and a small bucket so
// several buckets overlap backward, follow the one-process trajectory:
// per-step losses, gradient norms and every final parameter tensor within
// the bounds docs/testing.md derives, for GPT-2
// (tied embedding) and LLaMA (untied head). The reference is computed on
// every rank. Parameter counts do not divide by 3 (np 3 runs uneven shards).
// Every layout runs under AdamW and under plain SGD: Adam's update does not
// change when an element's gradient is off by a constant factor, SGD's does.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "common/named_flat.h"
#include "common/test_models.h"
#include "dp_env.h"
#include "model/transformer.h"
#include "optim/muon.h"
#include "parallel/data/shard_layout.h"

namespace parallm::dp_test {
namespace {

// SGD runs 8 steps (at lr 0.1, dp_dist_main.cpp): a wrong gradient scale
// shows from the first update on, and the suite stays short.
int steps_for(const std::string& optimizer) { return optimizer == "sgd" ? 8 : 20; }

const RunResult& reference(const std::string& family, const std::string& optimizer) {
  static std::map<std::string, RunResult> cache;
  const std::string key = family + "+" + optimizer;
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  ModelConfig m = family == "gpt2" ? testing::tiny_gpt2() : testing::tiny_llama();
  return cache[key] = train_run(m, DpOptions{}, nullptr, steps_for(optimizer), optimizer);
}

struct Layout {
  int zero;
  DpMode mode;
  bool overlap;
  std::string name() const {
    return fmt::format("{} zero {}{}", dp_mode_name(mode), zero, overlap ? "" : " no-overlap");
  }
};

// got against the one-process ref, tensor by tensor (docs/testing.md).
void expect_dp_trajectory(const ModelConfig& m, const RunResult& ref, const RunResult& got,
                          const std::string& what) {
  testing::Trajectory r{ref.losses, ref.grad_norms, testing::named_from_flat(m, ref.params)};
  testing::Trajectory g{got.losses, got.grad_norms, testing::named_from_flat(m, got.params)};
  testing::expect_same_trajectory(
      testing::run_arithmetic(ref.config, m, r, testing::element_count(r.params)), r, g, what);
}

void expect_same_trajectory(const std::string& family, const Layout& l,
                            const std::string& optimizer = "adamw") {
  comm::Communicator* world = env().world;
  DpOptions o;
  o.dp = world->size();
  o.zero = l.zero;
  o.mode = l.mode;
  o.overlap = l.overlap;
  o.bucket_mb = 0.05;  // ~13k floats: several buckets, some inside one block
  ModelConfig m = family == "gpt2" ? testing::tiny_gpt2() : testing::tiny_llama();
  const RunResult& ref = reference(family, optimizer);
  RunResult got =
      train_run(m, o, world->size() > 1 ? world : nullptr, steps_for(optimizer), optimizer);
  const std::string what = fmt::format("{} {} dp {} {}", family, optimizer, o.dp, l.name());
  ASSERT_EQ(got.params.size(), ref.params.size()) << what;
  // The runs use AdamW eps 1e-6 (dp_dist_main.cpp): with 1e-8, exactly-zero
  // gradients (GPT-2's key bias) hold fp32 noise that Adam turns into
  // lr-sized updates of random sign in any two runs (docs/testing.md).
  expect_dp_trajectory(m, ref, got, what);
  if (world->size() > 1) {
    for (size_t s = 0; s < got.comm_bytes.size(); ++s)
      EXPECT_GT(got.comm_bytes[s], 0) << what << ", step " << s;
  }
}

const Layout kLayouts[] = {
    {0, DpMode::AllReduce, true},  {0, DpMode::AllReduce, false},      {1, DpMode::AllReduce, true},
    {2, DpMode::AllReduce, true},  {2, DpMode::AllReduce, false},      {3, DpMode::AllReduce, true},
    {3, DpMode::AllReduce, false}, {0, DpMode::ParameterServer, true},
};

TEST(DataParallelLayout, Gpt2MatchesOneProcess) {
  for (const Layout& l : kLayouts) expect_same_trajectory("gpt2", l);
}

TEST(DataParallelLayout, LlamaMatchesOneProcess) {
  for (const Layout& l : kLayouts) expect_same_trajectory("llama", l);
}

TEST(DataParallelLayout, SgdMatchesOneProcess) {
  for (const char* family : {"gpt2", "llama"})
    for (const Layout& l : kLayouts) expect_same_trajectory(family, l, "sgd");
}

}  // namespace
}  // namespace parallm::dp_test

namespace parallm::dp_test {
namespace {

// Every optimizer on a few layouts (DDP, ZeRO-1 and -3, the parameter
// server), 8 steps, against its own one-process run: LLaMA for all, GPT-2
// too for Muon. Under ZeRO Muon sums each matrix's update over the ranks
// owning its parts; the shards cut GPT-2's fc (np 2, 4) and proj (np 3) and
// LLaMA's gate and down (np 3), which the test checks so it keeps covering that.
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

TEST(DataParallelLayout, OptimizersMatchOneProcess) {
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
