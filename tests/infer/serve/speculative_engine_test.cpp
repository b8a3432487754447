// Speculative decoding in the continuous engine (serve/speculative_step.h):
// 24 greedy sequences of mixed lengths, submitted at once and while others
// run, each give exactly the tokens generate() gives that prompt alone,
// with prompt-lookup drafts and with draft models (the target itself,
// whose drafts are all accepted, and the target cut to one layer), with
// the prefix cache, chunked prefill, and a pool so small that sequences are
// preempted and drafts go without blocks; EOS ends sequences mid-step.
// Afterwards every block is free, and the counters say drafts were
// proposed and accepted. Sampled, a draft model with the target's law has
// every draft accepted.
#include <gtest/gtest.h>

#include <future>
#include <mutex>

#include "common/random_tokens.h"
#include "common/test_models.h"
#include "infer/draft_model.h"
#include "infer/generator.h"
#include "infer/serve/continuous_engine.h"

namespace parallm::serve {
namespace {

using testing::random_tokens;

struct Collected {
  std::mutex mu;
  std::vector<int32_t> tokens;
  FinishReason finish = FinishReason::Length;
  std::promise<void> done;
};

struct Case {
  const char* name;
  int64_t blocks, block_size, budget, running;
  int draft;  // 0: prompt lookup, 1: the target itself, 2: its first layer
};

class SpeculativeEngine : public ::testing::TestWithParam<Case> {};

std::vector<int32_t> repeated(const std::vector<int32_t>& unit, int times) {
  std::vector<int32_t> out;
  for (int i = 0; i < times; ++i) out.insert(out.end(), unit.begin(), unit.end());
  return out;
}

TEST_P(SpeculativeEngine, GreedyTokensEqualEachSequenceAlone) {
  const Case k = GetParam();
  // GPT-2 with spread weights (greedy choices not near ties) repeats
  // itself within a few tokens, so prompt lookup's drafts are accepted too.
  const ModelConfig cfg = testing::decoder_for_generation(0);
  Allocator a;
  Transformer m(cfg, a);
  m.params().init_random(3);
  ModelConfig one = cfg;
  one.n_layers = 1;
  Transformer first_layer(one, a);
  first_layer.params().init_random(3);
  const int64_t V = cfg.vocab_size;
  // Mixed lengths; every other prompt repeats itself (prompt lookup finds drafts).
  std::vector<std::vector<int32_t>> prompts;
  for (int i = 0; i < 24; ++i)
    prompts.push_back(i % 2 ? repeated(random_tokens(2 + i % 5, V, 100 + i), 3)
                            : random_tokens(1 + (i * 7) % 17, V, 100 + i));
  const int64_t max_new = 14;
  GenerateOptions g;
  g.max_new_tokens = max_new;
  g.sampling.temperature = 0.0;
  // The EOS: the sixth token the second prompt chooses, so that sequence
  // (and any choosing it too) ends mid-way, likely inside a verified step.
  const std::vector<int32_t> eos = {generate(m, {prompts[1]}, g)[0].tokens.at(5)};
  g.eos_ids = eos;
  std::vector<Generation> alone;
  for (const auto& p : prompts) alone.push_back(generate(m, {p}, g)[0]);

  PagedKvCache cache(cfg, m.tp(), k.blocks, k.block_size, a);
  StepRunner runner(m, cache, nullptr, nullptr);
  std::optional<DraftModel> draft;
  ContinuousEngineOptions o;
  o.scheduler = {.max_batched_tokens = k.budget, .max_running = k.running, .prefix_cache = true};
  o.eos_ids = eos;
  if (k.draft == 0) {
    o.speculative.ngram_tokens = 3;
  } else {
    draft.emplace(k.draft == 1 ? m : first_layer, k.blocks, k.block_size);
    o.speculative = {.draft = &*draft, .draft_tokens = 3};
  }
  ContinuousEngine engine(cfg, runner, o);
  std::vector<Collected> got(prompts.size());
  auto submit = [&](size_t i) {
    SequenceRequest r{.prompt = prompts[i], .max_new_tokens = max_new};
    r.sampling.temperature = 0.0;
    engine.submit(r, [&got, i](const SequenceUpdate& u) {
      Collected& c = got[i];
      std::lock_guard<std::mutex> lk(c.mu);
      for (const SampledToken& t : u.tokens) c.tokens.push_back(t.token);
      if (u.finished) {
        c.finish = u.finish;
        c.done.set_value();
      }
    });
  };
  for (size_t i = 0; i < 12; ++i) submit(i);  // a first wave, then more while it runs
  got[0].done.get_future().wait();
  for (size_t i = 12; i < prompts.size(); ++i) submit(i);
  for (size_t i = 1; i < prompts.size(); ++i) got[i].done.get_future().wait();
  int64_t total = 0, eos_ends = 0;
  for (size_t i = 0; i < prompts.size(); ++i) {
    eos_ends += alone[i].finish == FinishReason::Eos;
    EXPECT_EQ(got[i].tokens, alone[i].tokens) << k.name << ": sequence " << i;
    EXPECT_EQ(got[i].finish, alone[i].finish) << k.name << ": sequence " << i;
    total += static_cast<int64_t>(alone[i].tokens.size());
  }
  EXPECT_GT(eos_ends, 0);  // some sequences end at EOS, possibly mid-step
  engine.shutdown(true);
  EXPECT_TRUE(engine.pool_whole()) << k.name;
  EXPECT_EQ(engine.pool().used_blocks(), 0) << k.name;
  engine.pool().check_invariants();
  const EngineCounters c = engine.counters();
  EXPECT_EQ(c.generated_tokens, total) << k.name;
  EXPECT_GT(c.spec_draft_tokens, 0) << k.name;
  EXPECT_GT(c.spec_accepted_tokens, 0) << k.name;
  EXPECT_LE(c.spec_accepted_tokens, c.spec_draft_tokens) << k.name;
  // The target drafting for itself proposes what it then chooses: only the
  // step that ends a sequence (an EOS or the length inside its drafts) can
  // leave drafts unkept, at most k = 3 per sequence (docs/testing.md).
  if (k.draft == 1) {
    EXPECT_LE(c.spec_draft_tokens - c.spec_accepted_tokens, 3 * 24) << k.name;
  }
  std::printf("%s: drafts %lld, accepted %lld, preemptions %lld\n", k.name,
              static_cast<long long>(c.spec_draft_tokens),
              static_cast<long long>(c.spec_accepted_tokens),
              static_cast<long long>(c.preemptions));
}

INSTANTIATE_TEST_SUITE_P(
    Drafts, SpeculativeEngine,
    ::testing::Values(Case{"ngram", 256, 16, 256, 16, 0}, Case{"ngram_chunked", 256, 4, 24, 8, 0},
                      Case{"ngram_small_pool", 20, 4, 64, 12, 0},
                      Case{"model_itself", 256, 16, 256, 16, 1},
                      Case{"model_first_layer", 256, 16, 256, 16, 2},
                      Case{"model_small_pool", 20, 4, 64, 12, 2}),
    [](const auto& info) { return std::string(info.param.name); });

// Sampled, with the target drafting for itself: q is p, so min(1, p/q) = 1
// and every draft is kept but those an end cuts (the q path of
// verify_drafts under the engine); each sequence ends with its tokens.
TEST(SpeculativeEngineSampled, ADraftWithTheTargetsLawIsAlwaysAccepted) {
  const ModelConfig cfg = testing::decoder_for_generation(0);
  Allocator a;
  Transformer m(cfg, a);
  m.params().init_random(3);
  PagedKvCache cache(cfg, m.tp(), 256, 16, a);
  StepRunner runner(m, cache, nullptr, nullptr);
  DraftModel draft(m, 256, 16);
  ContinuousEngineOptions o;
  o.scheduler = {.max_batched_tokens = 256, .max_running = 8};
  o.speculative = {.draft = &draft, .draft_tokens = 3};
  ContinuousEngine engine(cfg, runner, o);
  const int n = 8;
  const int64_t max_new = 12;
  std::vector<Collected> got(n);
  for (int i = 0; i < n; ++i) {
    SequenceRequest r{.prompt = random_tokens(3 + i, cfg.vocab_size, 200 + i),
                      .max_new_tokens = max_new};
    r.sampling = {.temperature = 0.9, .top_k = 50, .seed = static_cast<uint64_t>(i)};
    engine.submit(r, [&got, i](const SequenceUpdate& u) {
      Collected& c = got[static_cast<size_t>(i)];
      std::lock_guard<std::mutex> lk(c.mu);
      for (const SampledToken& t : u.tokens) c.tokens.push_back(t.token);
      if (u.finished) c.done.set_value();
    });
  }
  for (Collected& c : got) c.done.get_future().wait();
  for (const Collected& c : got) EXPECT_EQ(static_cast<int64_t>(c.tokens.size()), max_new);
  engine.shutdown(true);
  EXPECT_TRUE(engine.pool_whole());
  const EngineCounters c = engine.counters();
  EXPECT_GT(c.spec_draft_tokens, 0);
  EXPECT_LE(c.spec_draft_tokens - c.spec_accepted_tokens, 3 * n);
  std::printf("sampled: drafts %lld, accepted %lld\n", static_cast<long long>(c.spec_draft_tokens),
              static_cast<long long>(c.spec_accepted_tokens));
}

}  // namespace
}  // namespace parallm::serve
