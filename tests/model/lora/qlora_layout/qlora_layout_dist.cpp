// Layout invariance of QLoRA training (docs/qlora.md): every block linear's
// frozen base in NF4 (double quantisation on), each tp shard cut from the
// full tensor's quantisation. dp 2 with ZeRO-2 (the frozen NF4 base is never
// sharded), tp 2 with sequence parallelism and pp 2 follow the one-process
// QLoRA run for 20 steps: losses, gradient norms and every adapter within
// the bounds docs/testing.md derives in fp32; under bf16 GEMMs the losses within the 2e-3 the
// precision tests allow. Every tp shard dequantises bit-equal to the
// one-process base; quantising shards on their own (the mutation) does not.
// QLORA_DENSE_CONTROL=1 runs the same layouts over a dense LoRA base (a
// control: a difference that NF4 does not cause shows there too).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <map>

#include "base/error.h"
#include "common/layout_groups.h"
#include "common/mpi_gtest.h"
#include "common/test_models.h"
#include "common/trajectory_config.h"
#include "common/trajectory_match.h"
#include "common/whole_parameters.h"
#include "kernels/cpu/nf4_weight.h"
#include "model/lora/qlora_base.h"
#include "model/transformer.h"
#include "train/pipeline_step.h"
#include "train/trainer.h"

namespace parallm::qlora_test {

struct QloraTestEnv {
  comm::Communicator* world = nullptr;
  std::string shard;
};
QloraTestEnv& env() {
  static QloraTestEnv e;
  return e;
}

namespace {

struct Layout {
  int tp = 1, dp = 1, pp = 1;
  bool sp = false;
  int zero = 0;
  Precision precision = Precision::FP32;
  std::string name() const {
    return fmt::format("tp {} dp {} pp {}{}{}{}", tp, dp, pp, sp ? " sp" : "",
                       zero ? fmt::format(" zero {}", zero) : "",
                       precision == Precision::BF16 ? " bf16" : "");
  }
};

struct RunResult {
  bool ran = false;
  std::vector<double> losses, grad_norms;
  testing::NamedParams params;  // adapters, whole
  double bits = 0;              // NF4 bits per base weight on this rank
  TrainConfig config;           // the run's settings
};

// Block linears 64-aligned under tp 2 (o: 64 columns a shard, down 128).
ModelConfig qlora_model(const std::string& family) {
  ModelConfig m = family == "gpt2" ? testing::tp_gpt2() : testing::tp_llama();
  m.hidden = 128;
  m.head_dim = family == "gpt2" ? 32 : 16;
  m.intermediate = family == "gpt2" ? 512 : 256;
  m.lora.rank = 4;
  m.lora.alpha = 16.0;
  m.lora.targets = {"all-linear"};
  m.lora.qlora = std::getenv("QLORA_DENSE_CONTROL") == nullptr;
  m.lora.double_quant = m.lora.qlora;
  return m;
}

// The mutation: each shard's own quantisation (offset and absmax2 of the
// shard alone), which one process never computes.
void quantize_each_shard(ParameterSet& base, const ModelConfig& cfg, Allocator& alloc) {
  for (int i = 0; i < base.size(); ++i) {
    const ParamSpec& s = base.spec(i);
    if (!is_block_linear_weight(s.name)) continue;
    base.set_nf4(i, std::make_shared<cpu::Nf4Weight>(alloc, base.value(ParamRef{i}), s.shape[0],
                                                     s.shape[1], cfg.lora.double_quant));
  }
  base.drop_nf4_values(alloc);
}

RunResult run(const ModelConfig& model, const Layout& l, int steps = 20) {
  testing::LayoutGroups g =
      testing::split_layout(*env().world, {.tp = l.tp, .dp = l.dp, .pp = l.pp});
  if (!g.member) return {};
  TpGroup tp{.comm = l.tp > 1 ? g.tp.get() : nullptr, .sequence_parallel = l.sp};
  TrainConfig t = testing::trajectory_config(env().shard, steps, "adamw", 1e-5);
  t.optimizer.lr = 1e-2;  // adapters move visibly in 20 steps
  t.parallelism.dp.dp = l.dp;
  t.parallelism.dp.zero = l.zero;
  t.parallelism.dp.bucket_mb = 0.01;
  t.parallelism.tp = l.tp;
  t.parallelism.sequence_parallel = l.sp;
  t.parallelism.pp = l.pp;
  t.precision.matmul = l.precision;
  t.validate(model, l.tp * l.dp * l.pp);
  Allocator alloc;
  Transformer m(model, alloc, tp, pipeline_stage(t, model, g.pp_rank));
  m.base_params().init_random(7);
  m.params().init_random(7);
  RunResult res;
  if (model.lora.qlora)
    res.bits = quantize_base_nf4(m.base_params(), model, tp, alloc).bits_per_weight();
  Trainer tr(m, t, alloc, 0.0, l.dp > 1 ? g.dp.get() : nullptr,
             PipelineGroups{l.pp > 1 ? g.pp.get() : nullptr, g.embedding.get()});
  res.ran = true;
  tr.run([&](const StepStats& s) {
    res.losses.push_back(s.loss);
    res.grad_norms.push_back(s.grad_norm);
  });
  res.params = testing::whole_parameters(tr, m.params(), tp);
  res.config = t;
  return res;
}

const RunResult& one_process(const std::string& family, Precision p) {
  static std::map<std::string, RunResult> cache;
  const std::string key = family + (p == Precision::BF16 ? " bf16" : "");
  if (!cache.contains(key)) cache[key] = run(qlora_model(family), Layout{.precision = p});
  return cache[key];
}

void expect_same_trajectory(const std::string& family, const Layout& l) {
  const RunResult& ref = one_process(family, l.precision);
  const RunResult got = run(qlora_model(family), l);
  if (!got.ran) return;
  const std::string what = "qlora " + family + " " + l.name();
  ASSERT_EQ(got.losses.size(), ref.losses.size()) << what;
  if (qlora_model(family).lora.qlora) {
    EXPECT_LE(got.bits, 4.2) << what;
  }
  EXPECT_LT(ref.losses.back(), ref.losses.front() - 0.05) << what << ": QLoRA training learns";
  for (const auto& [name, v] : got.params)
    EXPECT_TRUE(name.ends_with(".lora_A") || name.ends_with(".lora_B")) << name;
  if (l.precision == Precision::FP32) {
    // The layouts' sums differ only in order (docs/testing.md).
    const testing::Trajectory r = testing::trajectory_of(ref);
    testing::expect_same_trajectory(testing::run_arithmetic(ref.config, qlora_model(family), r,
                                                            testing::element_count(r.params)),
                                    r, testing::trajectory_of(got), what,
                                    /*names_from_got=*/l.pp > 1);
  } else {
    // bf16: a few roundings of the next GEMM's inputs move, as in
    // tests/parallel/tensor/tp_precision_dist.
    for (size_t s = 0; s < ref.losses.size(); ++s)
      EXPECT_NEAR(got.losses[s], ref.losses[s], 2e-3 * std::abs(ref.losses[s])) << what << " " << s;
  }
}

TEST(QloraLayout, DataParallelZero2) {
  for (const char* family : {"llama", "gpt2"})
    expect_same_trajectory(family, Layout{.dp = 2, .zero = 2});
}

TEST(QloraLayout, TensorParallelSequenceParallel) {
  for (const char* family : {"llama", "gpt2"})
    expect_same_trajectory(family, Layout{.tp = 2, .sp = true});
}

TEST(QloraLayout, PipelineParallel) {
  for (const char* family : {"llama", "gpt2"}) expect_same_trajectory(family, Layout{.pp = 2});
}

TEST(QloraLayout, Bf16FollowsOneProcess) {
  expect_same_trajectory("llama", Layout{.tp = 2, .sp = true, .precision = Precision::BF16});
  expect_same_trajectory("llama", Layout{.dp = 2, .zero = 2, .precision = Precision::BF16});
}

// Every tp shard dequantises to exactly the one-process weights (each rank
// rebuilds the one-process base from the seed and compares its slice); a
// shard quantised on its own (the mutation) does not.
int64_t differing_base_values(bool shard_quantised) {
  testing::LayoutGroups g = testing::split_layout(*env().world, {.tp = 2});
  if (!g.member) return -1;
  const ModelConfig cfg = qlora_model("llama");
  TpGroup tp{.comm = g.tp.get(), .sequence_parallel = true};
  Allocator alloc;
  Transformer m(cfg, alloc, tp), one(cfg, alloc);
  m.base_params().init_random(7);
  one.base_params().init_random(7);
  if (shard_quantised)
    quantize_each_shard(m.base_params(), cfg, alloc);
  else
    quantize_base_nf4(m.base_params(), cfg, tp, alloc);
  quantize_base_nf4(one.base_params(), cfg, {}, alloc);
  int64_t differ = 0;
  for (int i = 0; i < m.base_params().size(); ++i) {
    const cpu::Nf4Weight* w = m.base_params().nf4(ParamRef{i});
    if (w == nullptr) continue;
    const ParamSpec& s = m.base_params().spec(i);
    const cpu::Nf4Weight* full = one.base_params().nf4(ParamRef{one.base_params().find(s.name)});
    std::vector<float> mine(w->numel()), all(full->numel());
    w->dequantize(0, w->numel(), mine.data());
    full->dequantize(0, full->numel(), all.data());
    const int64_t C = full->cols();
    for (int64_t r = 0; r < w->rows(); ++r)
      for (int64_t c = 0; c < w->cols(); ++c) {
        const int64_t fr = r + (s.shard_dim == 0 ? s.shard_begin : 0);
        const int64_t fc = c + (s.shard_dim == 1 ? s.shard_begin : 0);
        differ += mine[r * w->cols() + c] != all[fr * C + fc];
      }
  }
  return differ;
}

TEST(QloraLayout, ShardsDequantiseToTheOneProcessBase) {
  const int64_t cut = differing_base_values(false);
  if (cut < 0) return;
  EXPECT_EQ(cut, 0);
  // The mutation: per-shard offsets and absmax2 move many scales.
  const int64_t own = differing_base_values(true);
  EXPECT_GT(own, 0);
  if (env().world->rank() == 0)
    std::printf("per-shard quantisation: %lld base values differ from one process on rank 0\n",
                static_cast<long long>(own));
}

// A tp whose shards cut NF4 blocks is refused naming the weight.
TEST(QloraLayout, MisalignedShardsAreRefused) {
  testing::LayoutGroups g = testing::split_layout(*env().world, {.tp = 2});
  if (!g.member) return;
  ModelConfig m = testing::tp_llama();  // o: 64 columns, 32 a shard
  m.lora.rank = 2;
  m.lora.targets = {"q"};
  m.lora.qlora = true;
  Allocator alloc;
  TpGroup tp{.comm = g.tp.get()};
  Transformer model(m, alloc, tp);
  model.base_params().init_random(1);
  try {
    quantize_base_nf4(model.base_params(), m, tp, alloc);
    FAIL() << "expected a refusal";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("layers.0.attn.o.weight"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("cut its NF4 blocks"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace parallm::qlora_test

int main(int argc, char** argv) {
  return parallm::testing::run_training_dist_tests(argc, argv, parallm::qlora_test::env(), "qlora");
}
