// Mixed precision end to end (Trainer, one process): bf16 and fp16 runs track
// the fp32 run over 50 steps; an fp16 overflow is skipped everywhere (no
// update, no schedule step) and the loss scale backs off, then grows back;
// a NaN under fp32 stops the run naming the step and the parameter, or is
// skipped with --on-nan skip.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "common/small_training.h"

namespace parallm::precision_test {
namespace {

// Worst relative gap between two runs' per-step losses, and the relative
// distance of the final parameters.
struct Gap {
  double loss = 0, params = 0;
};
Gap gap(const RunResult& a, const RunResult& ref) {
  Gap g;
  for (size_t s = 0; s < ref.steps.size(); ++s)
    g.loss = std::max(g.loss, std::abs(a.steps[s].loss - ref.steps[s].loss) / ref.steps[s].loss);
  double dd = 0, ss = 0;
  for (size_t i = 0; i < ref.params.size(); ++i) {
    const double d = double(a.params[i]) - ref.params[i];
    dd += d * d;
    ss += double(ref.params[i]) * ref.params[i];
  }
  g.params = std::sqrt(dd / ss);
  return g;
}

// Tolerances (docs/mixed_precision.md): each GEMM input carries a relative
// rounding error of up to 2^-9 (bf16) or 2^-12 (fp16); over 50 Adam steps at
// lr 3e-3 the trajectories drift apart but must stay close: per-step losses
// within 1% (bf16) / 0.5% (fp16) of fp32's, final parameters within 2% /
// 0.5% relative distance (measured: bf16 1.3e-3 and 4.7e-3, fp16 6.8e-4 and
// 7.7e-4 at worst, so about 4-7x margin), and the final loss no more than
// 5% above fp32's.
void expect_tracks_fp32(const std::string& name) {
  const std::string shard = make_shard("precision_" + name);
  const ModelConfig c = family(name);
  TrainConfig t = small_run(shard, 50);
  const RunResult f32 = train(c, t);
  for (Precision p : {Precision::BF16, Precision::FP16}) {
    t.precision.matmul = p;
    const RunResult r = train(c, t);
    const Gap g = gap(r, f32);
    const bool bf16 = p == Precision::BF16;
    const char* pn = bf16 ? "bf16" : "fp16";
    EXPECT_LE(g.loss, bf16 ? 0.01 : 0.005) << name << " " << pn << ": worst per-step loss gap";
    EXPECT_LE(g.params, bf16 ? 0.02 : 0.005) << name << " " << pn << ": final parameter distance";
    EXPECT_GT(g.loss, 0.0) << name << " " << pn << ": identical to fp32, so not in effect";
    EXPECT_LT(r.steps.back().loss, 1.05 * f32.steps.back().loss) << name << " " << pn;
    for (const StepStats& s : r.steps) EXPECT_FALSE(s.skipped) << name << " " << pn;
    std::printf("%s %s vs fp32 over 50 steps: worst loss gap %.2e, parameter distance %.2e\n",
                name.c_str(), pn, g.loss, g.params);
  }
  std::filesystem::remove(shard);
}

TEST(MixedPrecision, Gpt2TracksFp32) { expect_tracks_fp32("gpt2"); }
TEST(MixedPrecision, LlamaTracksFp32) { expect_tracks_fp32("llama"); }

// The emulated bf16 GEMM rounds exactly as oneDNN's does; only the summation
// order differs, so the two runs agree far more closely than bf16 and fp32.
TEST(MixedPrecision, EmulatedBf16MatchesNative) {
  if (!cpu::cpu_has_avx512_bf16()) GTEST_SKIP() << "no AVX512-BF16";
  const std::string shard = make_shard("precision_emu");
  TrainConfig t = small_run(shard, 10);
  t.precision.matmul = Precision::BF16;
  const RunResult native = train(family("gpt2"), t);
  t.precision.emulate_lowp_gemm = true;
  const RunResult emulated = train(family("gpt2"), t);
  const Gap g = gap(emulated, native);
  EXPECT_LE(g.loss, 1e-3);
  EXPECT_LE(g.params, 1e-3);
  std::filesystem::remove(shard);
}

// A loss scale far too large: the fp16-rounded logit gradients overflow, the
// step is skipped (parameters untouched, optimizer and schedule not advanced)
// and the scale halves (hysteresis 1) until the gradients fit; after
// `window` clean steps it doubles again.
TEST(MixedPrecision, Fp16OverflowIsSkippedAndTheScaleBacksOffThenGrows) {
  const std::string shard = make_shard("precision_overflow");
  TrainConfig t = small_run(shard, 30);
  t.precision.matmul = Precision::FP16;
  t.precision.loss_scale =
      LossScalerConfig{.initial_scale = std::ldexp(1.0, 40), .window = 4, .hysteresis = 1};
  std::vector<float> initial;
  const RunResult r = train(family("gpt2"), t, [&](Transformer& m, Trainer&) {
    const Tensor& v = m.params().flat_values();
    initial.assign(v.data<float>(), v.data<float>() + v.numel());
  });
  ASSERT_TRUE(r.steps[0].skipped);
  // The tied head's dlogits overflow first; the first gradient backward
  // completes is the final norm's.
  EXPECT_NE(r.steps[0].nonfinite.find("final_norm.weight"), std::string::npos)
      << r.steps[0].nonfinite;
  int64_t skipped = 0, first_clean = -1;
  for (size_t s = 0; s < r.steps.size(); ++s) {
    const StepStats& st = r.steps[s];
    if (st.skipped) ++skipped;
    if (!st.skipped && first_clean < 0) first_clean = static_cast<int64_t>(s);
    if (s == 0) continue;
    const StepStats& prev = r.steps[s - 1];
    if (prev.skipped) {
      EXPECT_EQ(st.loss_scale, prev.loss_scale / 2) << "step " << s;
    }
    if (first_clean < 0) {
      EXPECT_EQ(st.lr, r.steps[0].lr) << "the schedule must not move on skipped steps";
      EXPECT_TRUE(std::isfinite(st.loss)) << "the loss itself is not scaled";
    }
  }
  ASSERT_GT(first_clean, 5) << "2^40 should take several halvings";
  EXPECT_EQ(r.updates, static_cast<int64_t>(r.steps.size()) - skipped);
  // Growth: the first clean steps run at one scale, then it doubles after 4.
  const double s0 = r.steps[first_clean].loss_scale;
  for (int k = 0; k < 4; ++k) ASSERT_FALSE(r.steps[first_clean + k].skipped);
  EXPECT_EQ(r.steps[first_clean + 4].loss_scale, 2 * s0);
  EXPECT_LT(r.steps.back().loss, r.steps[first_clean].loss);
  // Nothing changed the parameters while every step was skipped: rerun only
  // the skipped prefix and compare.
  t.training.steps = first_clean;
  const RunResult prefix = train(family("gpt2"), t);
  ASSERT_EQ(prefix.params.size(), initial.size());
  EXPECT_EQ(std::memcmp(prefix.params.data(), initial.data(), initial.size() * sizeof(float)), 0);
  std::filesystem::remove(shard);
}

// fp32 with a NaN planted in a weight gradient of block 0 at step 1 (through
// the model's gradient hook, which dp 1 leaves free).
void plant_nan(Transformer& m, int at_step, int* calls) {
  const int param = m.params().find("layers.0.attn.q.weight");
  const int L = m.config().n_layers;
  m.set_grad_ready_hook([&m, param, L, at_step, calls](int segment) {
    if (segment != L) return;               // block 0's unit completes as segment L
    if ((*calls)++ / 2 != at_step) return;  // two micro-batches per step
    m.params().grad({param})[3] = std::numeric_limits<float>::quiet_NaN();
  });
}

TEST(NonFinite, StopNamesTheStepAndTheParameter) {
  const std::string shard = make_shard("precision_nan_stop");
  int calls = 0;
  try {
    train(family("gpt2"), small_run(shard, 4),
          [&](Transformer& m, Trainer&) { plant_nan(m, 1, &calls); });
    ADD_FAILURE() << "a NaN gradient must stop the run";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("step 1"), std::string::npos) << msg;
    EXPECT_NE(msg.find("layers.0.attn.q.weight"), std::string::npos) << msg;
  }
  std::filesystem::remove(shard);
}

TEST(NonFinite, SkipRefusesTheStepAndGoesOn) {
  const std::string shard = make_shard("precision_nan_skip");
  TrainConfig t = small_run(shard, 4);
  t.precision.skip_nonfinite = true;
  int calls = 0;
  const RunResult r =
      train(family("gpt2"), t, [&](Transformer& m, Trainer&) { plant_nan(m, 1, &calls); });
  ASSERT_EQ(r.steps.size(), 4u);
  EXPECT_FALSE(r.steps[0].skipped);
  EXPECT_TRUE(r.steps[1].skipped);
  EXPECT_NE(r.steps[1].nonfinite.find("layers.0.attn.q.weight"), std::string::npos)
      << r.steps[1].nonfinite;
  EXPECT_FALSE(r.steps[2].skipped);
  EXPECT_EQ(r.updates, 3);
  EXPECT_EQ(r.steps[2].lr, r.steps[1].lr);  // the schedule waits for the refused step
  for (const float v : r.params) ASSERT_TRUE(std::isfinite(v));
  std::filesystem::remove(shard);
}

// A NaN in a weight itself: the loss is NaN, and the message names the weight.
TEST(NonFinite, NamesANonFiniteWeight) {
  const std::string shard = make_shard("precision_nan_weight");
  try {
    train(family("llama"), small_run(shard, 2), [](Transformer& m, Trainer&) {
      const int p = m.params().find("layers.1.mlp.up.weight");
      m.params().value({p})[5] = std::numeric_limits<float>::infinity();
    });
    ADD_FAILURE() << "an Inf weight must stop the run";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("step 0"), std::string::npos) << msg;
    EXPECT_NE(msg.find("parameter value in layers.1.mlp.up.weight"), std::string::npos) << msg;
  }
  std::filesystem::remove(shard);
}

}  // namespace
}  // namespace parallm::precision_test
