// A server step under pp 2 split into micro-batches in flight against the
// same step run whole (one stage after the other) and against one process.
// Decode rows (<= kSkinnyMaxRows per GEMM) are summed in an order that does
// not depend on the batch (skinny_gemm.h), so steps of decodes give
// bit-identical logits split or not. Prefill rows go through oneDNN's sgemm,
// which promises no such thing, so steps with prompt chunks are held to the
// one-process logits within the pp reference tests' tolerance.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "common/random_tokens.h"
#include "common/test_models.h"
#include "infer/serve/step_runner.h"
#include "kernels/cpu/skinny_gemm.h"
#include "serve_dist_env.h"

namespace parallm::serve {
namespace {

constexpr int64_t kBlockSize = 8, kBlocksPerSeq = 4;
constexpr float kRtol = 2e-5f, kAtol = 2e-5f;  // as tests/infer/generate_parity.py

struct Step {
  std::vector<int32_t> tokens;
  std::vector<PagedSpan> spans;
};

// A script of steps over sequences with prompts of the given lengths, each
// sequence with its own blocks. together: every prompt in one step (rows of
// several spans per micro-batch, > kSkinnyMaxRows); else one prompt per step.
// Then `decodes` steps of one fixed token per sequence.
std::vector<Step> script(const ModelConfig& cfg, const std::vector<int64_t>& prompts, bool together,
                         int decodes) {
  std::vector<Step> steps;
  std::vector<int64_t> pos(prompts.size(), 0);
  auto span = [&](size_t i, int64_t count, Step& s, uint64_t seed) {
    PagedSpan p{.pos0 = pos[i], .count = count, .blocks = {}};
    for (int64_t b = 0; b < kBlocksPerSeq; ++b)
      p.blocks.push_back(static_cast<int32_t>(static_cast<int64_t>(i) * kBlocksPerSeq + b));
    const std::vector<int32_t> t = testing::random_tokens(count, cfg.vocab_size, seed);
    s.tokens.insert(s.tokens.end(), t.begin(), t.end());
    s.spans.push_back(p);
    pos[i] += count;
  };
  if (together) steps.emplace_back();
  for (size_t i = 0; i < prompts.size(); ++i) {
    if (!together) steps.emplace_back();
    span(i, prompts[i], steps.back(), 10 + i);
  }
  for (int d = 0; d < decodes; ++d) {
    steps.emplace_back();
    for (size_t i = 0; i < prompts.size(); ++i) span(i, 1, steps.back(), 1000 + 100 * d + i);
  }
  return steps;
}

ModelStage half(const ModelConfig& cfg, int pp_rank) {
  const int h = static_cast<int>(cfg.n_layers) / 2;
  return ModelStage{.chunks = {{pp_rank * h, h}}, .embedding = pp_rank == 0, .head = pp_rank == 1};
}

// Runs the script on this rank's stage with at most micro_batches per step;
// rank 0 returns each step's logits, rank 1 follows and returns nothing.
std::vector<std::vector<float>> run_pp(const ModelConfig& cfg, const std::vector<Step>& steps,
                                       int micro_batches) {
  comm::Communicator& world = *dist_env().world;
  const std::unique_ptr<comm::Communicator> pp = world.split(0, world.rank(), "pp");
  Allocator a;
  Transformer m(cfg, a, {}, half(cfg, world.rank()));
  m.params().init_random(7);
  const int64_t seqs = static_cast<int64_t>(steps.back().spans.size());
  PagedKvCache cache(cfg, {}, seqs * kBlocksPerSeq, kBlockSize, a, m.cached_layers());
  StepRunner runner(m, cache, &world, pp.get(), micro_batches);
  std::vector<std::vector<float>> out;
  if (!runner.leader()) {
    runner.follow();
    return out;
  }
  for (const Step& s : steps) {
    const Tensor l = runner.run(s.tokens, s.spans);
    out.emplace_back(l.data<float>(), l.data<float>() + l.numel());
  }
  runner.stop();
  return out;
}

std::vector<std::vector<float>> run_whole(const ModelConfig& cfg, const std::vector<Step>& steps) {
  Allocator a;
  Transformer m(cfg, a);
  m.params().init_random(7);
  const int64_t seqs = static_cast<int64_t>(steps.back().spans.size());
  PagedKvCache cache(cfg, {}, seqs * kBlocksPerSeq, kBlockSize, a);
  std::vector<std::vector<float>> out;
  for (const Step& s : steps) {
    const Tensor l = m.forward_cached(s.tokens.data(), s.spans, cache);
    out.emplace_back(l.data<float>(), l.data<float>() + l.numel());
  }
  return out;
}

void expect_close(const std::vector<std::vector<float>>& got,
                  const std::vector<std::vector<float>>& want, const char* what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t s = 0; s < got.size(); ++s) {
    ASSERT_EQ(got[s].size(), want[s].size()) << what << " step " << s;
    float top = 0;
    for (float v : want[s]) top = std::max(top, std::abs(v));
    const float tol = kAtol + kRtol * top;
    for (size_t i = 0; i < got[s].size(); ++i)
      ASSERT_NEAR(got[s][i], want[s][i], tol) << what << " step " << s << " element " << i;
  }
}

ModelConfig config(bool llama) {
  ModelConfig c = llama ? testing::tiny_llama() : testing::tiny_gpt2();
  c.init_std = 0.2;
  return c;
}

class PipelineStep : public ::testing::TestWithParam<bool> {};

TEST_P(PipelineStep, DecodeStepsInMicroBatchesAreBitIdenticalToTheWholeStep) {
  const ModelConfig cfg = config(GetParam());
  // 6 sequences: a decode step has 6 rows (<= kSkinnyMaxRows), so do its
  // micro-batches of 2 or 3; prompts run one per step, the same either way.
  static_assert(6 <= cpu::kSkinnyMaxRows);
  const std::vector<Step> steps = script(cfg, {7, 3, 12, 1, 5, 9}, false, 5);
  const auto whole_step = run_pp(cfg, steps, 1);
  const auto split2 = run_pp(cfg, steps, 2);
  const auto split3 = run_pp(cfg, steps, 3);
  if (dist_env().world->rank() != 0) return;
  ASSERT_EQ(whole_step.size(), steps.size());
  for (size_t s = 0; s < steps.size(); ++s) {
    ASSERT_EQ(split2[s].size(), whole_step[s].size());
    EXPECT_EQ(std::memcmp(split2[s].data(), whole_step[s].data(), split2[s].size() * 4), 0)
        << "2 micro-batches, step " << s;
    EXPECT_EQ(std::memcmp(split3[s].data(), whole_step[s].data(), split3[s].size() * 4), 0)
        << "3 micro-batches, step " << s;
  }
  expect_close(split3, run_whole(cfg, steps), "3 micro-batches against one process");
}

TEST_P(PipelineStep, PromptStepsInMicroBatchesMatchOneProcess) {
  const ModelConfig cfg = config(GetParam());
  // All prompts in one step: micro-batches of 12-17 prefill rows (oneDNN).
  const std::vector<Step> steps = script(cfg, {7, 3, 12, 1, 5, 9, 14, 2}, true, 4);
  const auto split2 = run_pp(cfg, steps, 2);
  const auto split4 = run_pp(cfg, steps, 4);
  if (dist_env().world->rank() != 0) return;
  const auto one = run_whole(cfg, steps);
  expect_close(split2, one, "2 micro-batches against one process");
  expect_close(split4, one, "4 micro-batches against one process");
}

INSTANTIATE_TEST_SUITE_P(Models, PipelineStep, ::testing::Bool(),
                         [](const auto& i) { return i.param ? "llama" : "gpt2"; });

}  // namespace
}  // namespace parallm::serve
