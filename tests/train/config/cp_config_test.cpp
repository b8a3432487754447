// The context-parallel settings of a run (--cp, --cp-comm, --ulysses-degree;
// [parallelism] cp, cp_comm, ulysses_degree): read from TOML, and every bad
// combination refused before anything is allocated, naming the values.
#include <gtest/gtest.h>

#include <functional>

#include "base/error.h"
#include "common/run_config_file.h"
#include "train/config/train_config.h"

namespace parallm {
namespace {

std::string error_of_run(const std::function<void(TrainConfig&, ModelConfig&)>& edit) {
  TrainConfig t;
  t.data.train = {"x.bin"};
  ModelConfig m;  // 12 heads, 12 kv heads
  edit(t, m);
  try {
    t.validate(m);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(CpConfig, ReadsTheParallelismTable) {
  RunConfig rc = load_run_config(testing::write_toml(R"(
[data]
train = "a.bin"
[parallelism]
cp = 4
cp_comm = "a2a+ring"
ulysses_degree = 2
)"));
  EXPECT_EQ(rc.train.parallelism.cp, 4);
  EXPECT_EQ(rc.train.parallelism.cp_comm, "a2a+ring");
  EXPECT_EQ(rc.train.parallelism.ulysses_degree, 2);
  EXPECT_EQ(rc.train.parallelism.world_size(), 4);
}

TEST(CpConfig, BadCombinationsNameTheValues) {
  EXPECT_EQ(error_of_run([](TrainConfig& t, ModelConfig&) { t.parallelism.cp = 4; }), "(no error)");
  auto has = [](const std::string& s, const std::string& part) {
    return s.find(part) != std::string::npos;
  };
  std::string e = error_of_run([](TrainConfig& t, ModelConfig&) {
    t.parallelism.cp = 4;
    t.training.seq_len = 132;
  });
  EXPECT_TRUE(has(e, "sequence length (132) is not divisible by 2 x cp (8)")) << e;
  e = error_of_run([](TrainConfig& t, ModelConfig&) {
    t.parallelism.cp = 8;
    t.parallelism.cp_comm = "a2a";
  });
  EXPECT_TRUE(has(e, "attention heads per rank (12) are not divisible by the all-to-all degree (8"))
      << e;
  e = error_of_run([](TrainConfig& t, ModelConfig& m) {
    t.parallelism.cp = 4;
    t.parallelism.cp_comm = "a2a";
    m.arch = Arch::LLaMA;  // grouped-query heads
    m.n_kv_heads = 2;
  });
  EXPECT_TRUE(has(e, "key/value heads per rank (2) are not divisible by the all-to-all degree (4"))
      << e;
  e = error_of_run([](TrainConfig& t, ModelConfig&) { t.parallelism.cp_comm = "ulysses"; });
  EXPECT_TRUE(has(e, "unknown --cp-comm 'ulysses' (known: ring, a2a, a2a+ring)")) << e;
  e = error_of_run([](TrainConfig& t, ModelConfig&) {
    t.parallelism.cp = 4;
    t.parallelism.cp_comm = "a2a+ring";
    t.parallelism.ulysses_degree = 4;
  });
  EXPECT_TRUE(has(e, "got U 4 with cp 4")) << e;
  e = error_of_run([](TrainConfig& t, ModelConfig&) {
    t.parallelism.cp = 2;
    t.parallelism.ulysses_degree = 2;
  });
  EXPECT_TRUE(has(e, "--ulysses-degree (2) applies to --cp-comm a2a+ring only")) << e;
  e = error_of_run([](TrainConfig& t, ModelConfig&) { t.parallelism.cp = 0; });
  EXPECT_TRUE(has(e, "context parallel size (--cp) must be at least 1, got 0")) << e;
}

}  // namespace
}  // namespace parallm
