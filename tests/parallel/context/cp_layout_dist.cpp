// Layout invariance of context parallelism (DESIGN principle 1): cp 2 and 4
// with ring attention, Ulysses all-to-all (a2a) and their hybrid
// (a2a+ring, U 2), alone and with tp 2 + sequence parallel or dp 2 with
// ZeRO-2, follow the one-process trajectory for 20 steps (gradient
// accumulation, active clipping): per-step losses and gradient norms, and
// every parameter, within the bounds docs/testing.md derives, for GPT-2 (learned positions, tied
// embedding) and LLaMA (RoPE, grouped-query heads); and cp 2 with pp 2
// (1F1B); and all of it again with packed documents (the document mask,
// restarted positions and the EOD loss mask); a LLaMA with dynamic NTK
// rope scaling run past its max_positions; and a Mistral-style LLaMA with a
// sliding window shorter than the sequence (ring, a2a, hybrid, with and
// without packed documents). Each sequence is cut into
// 2 x cp load-balanced chunks, so the positions, labels and loss
// normalisation are all exercised. The cp group must carry traffic.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "common/trajectory_match.h"
#include "cp_env.h"

namespace parallm::cp_test {
namespace {

// "mistral": the LLaMA with a sliding window of 5 tokens, shorter than a
// 16-token sequence, so at cp 2 (chunks of 4) some chunk pairs fall wholly
// outside it.
ModelConfig family_model(const std::string& family) {
  if (family == "gpt2") return testing::tp_gpt2();
  ModelConfig c = testing::tp_llama();
  if (family == "llama-dynamic") {  // dynamic NTK rope scaling past its 8 positions
    c.max_positions = 8;
    c.rope_scaling = {.type = RopeScalingType::Dynamic, .factor = 2.0};
  }
  if (family == "mistral") c.sliding_window = 5;
  if (family == "llama-4-layers") c.n_layers = 4;  // two virtual stages of pp 2
  return c;
}

const CpRunResult& reference(const std::string& family, int64_t seq_len, int64_t global_batch,
                             bool packed = false) {
  static std::map<std::string, CpRunResult> cache;
  const std::string key = family + std::to_string(seq_len) + "/" + std::to_string(global_batch) +
                          (packed ? " packed" : "");
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  CpLayout one{.seq_len = seq_len, .global_batch = global_batch};
  one.packed = packed;
  return cache[key] = cp_train_run(family_model(family), one);
}

void expect_same_trajectory(const std::string& family, const CpLayout& l) {
  const CpRunResult& ref = reference(family, l.seq_len, l.global_batch, l.packed);
  CpRunResult got = cp_train_run(family_model(family), l);
  if (env().world->rank() >= l.cp * l.tp * l.dp * l.pp) return;  // not in this layout
  const std::string what = family + " " + l.name();
  ASSERT_EQ(got.losses.size(), ref.losses.size()) << what;
  for (size_t s = 0; s < ref.losses.size(); ++s)
    EXPECT_GT(got.cp_bytes[s], 0) << what << ", step " << s;
  const testing::Trajectory r = testing::trajectory_of(ref);
  const RunArithmetic run = testing::run_arithmetic(ref.config, family_model(family), r,
                                                    testing::element_count(r.params));
  const TrajectoryBounds b =
      testing::expect_same_trajectory(run, r, testing::trajectory_of(got), what,
                                      /*names_from_got=*/l.pp > 1);
  // Evaluation reduces the loss over cp (and pp): the same validation loss.
  testing::expect_eval_loss_match(b, ref.config, ref.grad_norms.back(), ref.val_loss, got.val_loss,
                                  what);
}

std::vector<CpLayout> alone_for(int world) {
  std::vector<CpLayout> out;
  if (world == 2) {
    out.push_back({.cp = 2, .comm = "ring"});
    out.push_back({.cp = 2, .comm = "a2a"});
  }
  if (world == 4) {
    out.push_back({.cp = 4, .comm = "ring"});
    out.push_back({.cp = 4, .comm = "a2a"});
    out.push_back({.cp = 4, .comm = "a2a+ring", .ulysses = 2});
  }
  return out;
}

TEST(ContextParallelLayout, Gpt2MatchesOneProcess) {
  for (const CpLayout& l : alone_for(env().world->size())) expect_same_trajectory("gpt2", l);
}

TEST(ContextParallelLayout, LlamaGqaMatchesOneProcess) {
  for (const CpLayout& l : alone_for(env().world->size())) expect_same_trajectory("llama", l);
}

// A longer sequence (48 tokens: chunks of 6 at cp 4) so blocks hold several
// rows and the skipped and partial blocks differ from the 16-token run.
TEST(ContextParallelLayout, LongerSequenceMatchesOneProcess) {
  const int world = env().world->size();
  if (world != 2 && world != 4) GTEST_SKIP() << "runs at np 2 and 4";
  expect_same_trajectory("llama", CpLayout{.cp = world, .comm = "ring", .seq_len = 48});
}

// Dynamic NTK rope scaling reads the whole sequence's length (16 > its 8
// positions), which each cp rank holds only chunks of.
TEST(ContextParallelLayout, DynamicNtkRopeMatchesOneProcess) {
  const int world = env().world->size();
  if (world != 2 && world != 4) GTEST_SKIP() << "runs at np 2 and 4";
  expect_same_trajectory("llama-dynamic", CpLayout{.cp = world, .comm = "ring"});
  expect_same_trajectory("llama-dynamic", CpLayout{.cp = world, .comm = "a2a"});
  // The stretched frequencies change the run: gradient norms by more than
  // 1e-3, 40x the reordering difference one step may make (rho 2.3e-5,
  // docs/testing.md; the small init keeps the first losses close).
  const CpRunResult &plain = reference("llama", 16, 8), &dyn = reference("llama-dynamic", 16, 8);
  double most = 0;
  for (size_t s = 0; s < plain.grad_norms.size() && s < dyn.grad_norms.size(); ++s)
    most = std::max(most, std::abs(dyn.grad_norms[s] / plain.grad_norms[s] - 1));
  EXPECT_GT(most, 1e-3);
}

// Activation recomputation reruns the ring (or the all-to-alls) in
// backward: selective and full, cp 2, ring and a2a, against the one-process
// run without recomputation (recompute gives bit-identical values).
TEST(ContextParallelLayout, ComposesWithRecompute) {
  if (env().world->size() != 2) GTEST_SKIP() << "runs at np 2";
  for (Recompute rc : {Recompute::Selective, Recompute::Full})
    for (const char* mode : {"ring", "a2a"})
      expect_same_trajectory("llama", CpLayout{.cp = 2, .comm = mode, .recompute = rc});
}

// cp 2 with tp 2 + sequence parallel, and with dp 2 under ZeRO-2 (the
// gradient shards span dp x cp).
TEST(ContextParallelLayout, ComposesWithTpAndDp) {
  if (env().world->size() != 4) GTEST_SKIP() << "runs at np 4";
  for (const char* family : {"gpt2", "llama"}) {
    expect_same_trajectory(family, CpLayout{.cp = 2, .tp = 2, .comm = "ring", .sp = true});
    expect_same_trajectory(family, CpLayout{.cp = 2, .dp = 2, .comm = "ring", .zero = 2});
  }
  expect_same_trajectory("llama", CpLayout{.cp = 2, .tp = 2, .comm = "a2a", .sp = true});
  expect_same_trajectory("llama", CpLayout{.cp = 2, .dp = 2, .comm = "a2a", .zero = 2});
  // ZeRO-1 and ZeRO-3 (parameters gathered over dp, gradients over dp x cp).
  for (int zero : {1, 3})
    expect_same_trajectory("llama", CpLayout{.cp = 2, .dp = 2, .comm = "ring", .zero = zero});
}

// cp 2 x pp 2 under every schedule (4 micro-batches): the pipeline passes
// each rank's cp share of the stream between stages.
TEST(ContextParallelLayout, ComposesWithPipeline) {
  if (env().world->size() != 4) GTEST_SKIP() << "runs at np 4";
  for (const char* family : {"gpt2", "llama"})
    expect_same_trajectory(family, CpLayout{.cp = 2, .pp = 2});
  expect_same_trajectory("llama", CpLayout{.cp = 2, .pp = 2, .comm = "a2a"});
  // The other schedules: GPipe, zero bubble (ZB-H1) and interleaved 1F1B.
  for (const char* schedule : {"gpipe", "zb"})
    expect_same_trajectory("llama", CpLayout{.cp = 2, .pp = 2, .schedule = schedule});
  expect_same_trajectory(
      "llama-4-layers", CpLayout{.cp = 2, .pp = 2, .schedule = "interleaved", .virtual_stages = 2});
}

// cp 4 composed, on 8 ranks: the hybrid (all-to-all over U 2 inside a ring
// of 2) with tp 2 + sp, with dp 2 under ZeRO-2 and with pp 2 (1F1B), and
// Ulysses with dp 2 and with pp 2, for LLaMA (GQA: each tp rank's 2 kv heads
// split over U 2) and GPT-2; the ring with tp 2 + sp and with dp 2 (LLaMA).
// (Ulysses at cp 4 with tp 2 would split 2 kv heads over 4: refused.)
TEST(ContextParallelLayout, Cp4ComposesWithTpDpAndPipeline) {
  if (env().world->size() != 8) GTEST_SKIP() << "runs at np 8";
  for (const char* family : {"llama", "gpt2"}) {
    expect_same_trajectory(
        family, CpLayout{.cp = 4, .tp = 2, .comm = "a2a+ring", .ulysses = 2, .sp = true});
    expect_same_trajectory(family,
                           CpLayout{.cp = 4, .dp = 2, .comm = "a2a+ring", .ulysses = 2, .zero = 2});
    expect_same_trajectory(family, CpLayout{.cp = 4, .pp = 2, .comm = "a2a+ring", .ulysses = 2});
    expect_same_trajectory(family, CpLayout{.cp = 4, .dp = 2, .comm = "a2a", .zero = 2});
    expect_same_trajectory(family, CpLayout{.cp = 4, .pp = 2, .comm = "a2a"});
  }
  expect_same_trajectory("llama", CpLayout{.cp = 4, .tp = 2, .comm = "ring", .sp = true});
  expect_same_trajectory("llama", CpLayout{.cp = 4, .dp = 2, .comm = "ring", .zero = 2});
}

// Packed documents (--reset-attention-mask --reset-position-ids
// --eod-mask-loss): every cp mode at cp 2 and 4 (the document starts index
// the whole sequence, so each rank masks its chunks and skips key blocks
// wholly before its queries' documents), and a 48-token sequence.
TEST(ContextParallelLayout, PackedDocumentsMatchOneProcess) {
  const int world = env().world->size();
  for (const char* family : {"gpt2", "llama"})
    for (CpLayout l : alone_for(world)) {
      l.packed = true;
      expect_same_trajectory(family, l);
    }
  if (world != 2 && world != 4) return;
  CpLayout longer{.cp = world, .comm = "a2a", .seq_len = 48};
  longer.packed = true;
  expect_same_trajectory("llama", longer);
}

// ... with tp 2 + sequence parallel (ring; a2a for LLaMA) and under pp 2
// (1F1B): every stage derives the documents from the micro-batch's inputs.
TEST(ContextParallelLayout, PackedDocumentsComposeWithTpAndPipeline) {
  if (env().world->size() != 4) GTEST_SKIP() << "runs at np 4";
  auto packed = [](CpLayout l) {
    l.packed = true;
    return l;
  };
  for (const char* family : {"gpt2", "llama"}) {
    expect_same_trajectory(family, packed({.cp = 2, .tp = 2, .comm = "ring", .sp = true}));
    expect_same_trajectory(family, packed({.cp = 2, .pp = 2}));
  }
  expect_same_trajectory("llama", packed({.cp = 2, .tp = 2, .comm = "a2a", .sp = true}));
}

// Sliding-window attention (Mistral) under every cp mode at cp 2 and 4,
// plain and with packed documents, and a 48-token sequence.
TEST(ContextParallelLayout, SlidingWindowMatchesOneProcess) {
  const int world = env().world->size();
  for (bool packed : {false, true})
    for (CpLayout l : alone_for(world)) {
      l.packed = packed;
      expect_same_trajectory("mistral", l);
    }
  if (world != 2 && world != 4) return;
  expect_same_trajectory("mistral", CpLayout{.cp = world, .comm = "ring", .seq_len = 48});
}

// The window acts: its one-process run is another trajectory than LLaMA's.
TEST(ContextParallelLayout, SlidingWindowChangesTheRun) {
  const CpRunResult& plain = reference("llama", 16, 8);
  const CpRunResult& windowed = reference("mistral", 16, 8);
  ASSERT_FALSE(plain.losses.empty());
  EXPECT_GT(std::abs(plain.losses[0] - windowed.losses[0]), 1e-4);
}

// The flags act: the packed one-process run is another trajectory.
TEST(ContextParallelLayout, PackedDocumentsChangeTheRun) {
  const CpRunResult& plain = reference("llama", 16, 8);
  const CpRunResult& packed = reference("llama", 16, 8, true);
  ASSERT_FALSE(plain.losses.empty());
  EXPECT_GT(std::abs(plain.losses[0] - packed.losses[0]), 1e-3);
}

}  // namespace
}  // namespace parallm::cp_test
