// ContinuousEngine under load: 32 sequences of mixed lengths, submitted at
// once and while others run, each give exactly the greedy tokens generate()
// gives that prompt alone -- with the prefix cache on and off, with a pool
// so small that sequences are preempted and recomputed, and with chunked
// prefill -- and afterwards every block is free. Cancel frees a sequence. A
// request's sequences are queued all or none.
#include <gtest/gtest.h>

#include <future>
#include <mutex>

#include "base/rng.h"
#include "common/random_tokens.h"
#include "common/test_models.h"
#include "infer/generator.h"
#include "infer/serve/continuous_engine.h"

namespace parallm::serve {
namespace {

using testing::random_tokens;

struct Collected {
  std::mutex mu;
  std::vector<int32_t> tokens;
  bool finished = false;
  FinishReason finish = FinishReason::Length;
  std::promise<void> done;
};

struct Case {
  const char* name;
  int64_t blocks, block_size, budget, running;
  bool prefix;
};

class EngineLoad : public ::testing::TestWithParam<Case> {};

TEST_P(EngineLoad, EachSequenceGetsItsAloneTokensAndThePoolEndsWhole) {
  const Case k = GetParam();
  ModelConfig cfg = testing::tiny_llama();
  cfg.init_std = 0.2;  // logits far apart: greedy choices are not near ties
  Allocator a;
  Transformer m(cfg, a);
  m.params().init_random(3);
  const int64_t V = cfg.vocab_size;
  // Mixed lengths; the second half shares a long prefix with the first.
  std::vector<std::vector<int32_t>> prompts;
  const std::vector<int32_t> shared = random_tokens(21, V, 99);
  for (int i = 0; i < 32; ++i) {
    std::vector<int32_t> p = i % 2 ? shared : std::vector<int32_t>{};
    const std::vector<int32_t> own = random_tokens(1 + (i * 7) % 17, V, 100 + i);
    p.insert(p.end(), own.begin(), own.end());
    prompts.push_back(p);
  }
  const int64_t max_new = 12;
  GenerateOptions g;
  g.max_new_tokens = max_new;
  g.sampling.temperature = 0.0;
  std::vector<std::vector<int32_t>> alone;
  for (const auto& p : prompts) alone.push_back(generate(m, {p}, g)[0].tokens);

  PagedKvCache cache(cfg, m.tp(), k.blocks, k.block_size, a);
  StepRunner runner(m, cache, nullptr, nullptr);
  ContinuousEngineOptions o;
  o.scheduler = {
      .max_batched_tokens = k.budget, .max_running = k.running, .prefix_cache = k.prefix};
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
        c.finished = true;
        c.finish = u.finish;
        c.done.set_value();
      }
    });
  };
  for (size_t i = 0; i < 16; ++i) submit(i);  // a first wave, then more while it runs
  got[0].done.get_future().wait();
  for (size_t i = 16; i < prompts.size(); ++i) submit(i);
  for (size_t i = 1; i < prompts.size(); ++i) got[i].done.get_future().wait();
  for (size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_EQ(got[i].tokens, alone[i]) << k.name << ": sequence " << i;
    EXPECT_EQ(got[i].finish, FinishReason::Length);
  }
  engine.shutdown(true);
  EXPECT_TRUE(engine.pool_whole()) << k.name;
  EXPECT_EQ(engine.pool().used_blocks(), 0) << k.name;
  engine.pool().check_invariants();
  const EngineCounters c = engine.counters();
  EXPECT_EQ(c.generated_tokens, 32 * max_new);
  if (k.prefix) {
    EXPECT_GT(c.prefix_cache_hits, 0) << k.name;
  }
  if (k.blocks < 40) {
    EXPECT_GT(c.preemptions, 0) << k.name;
  }
}

INSTANTIATE_TEST_SUITE_P(Layouts, EngineLoad,
                         ::testing::Values(Case{"prefix_cache", 256, 16, 256, 32, true},
                                           Case{"no_prefix_cache", 256, 16, 256, 32, false},
                                           Case{"chunked_prefill", 256, 4, 24, 8, true},
                                           Case{"small_pool_preempts", 24, 4, 64, 16, true}),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(ContinuousEngine, CancelFreesTheSequenceAndRefusalsNameTheProblem) {
  ModelConfig cfg = testing::tiny_gpt2();
  Allocator a;
  Transformer m(cfg, a);
  m.params().init_random(4);
  PagedKvCache cache(cfg, m.tp(), 64, 4, a);
  StepRunner runner(m, cache, nullptr, nullptr);
  ContinuousEngine engine(cfg, runner, {.scheduler = {.max_batched_tokens = 64, .max_running = 4}});
  std::promise<void> first, cancelled;
  std::shared_future<void> cancel_sent = cancelled.get_future().share();
  std::atomic<int> seen{0};
  SequenceRequest r{.prompt = {1, 2, 3}, .max_new_tokens = 40};
  // The engine thread waits in the first update until the cancel is sent,
  // so the sequence cannot run to its end first on a busy machine.
  const uint64_t id = engine.submit(r, [&](const SequenceUpdate&) {
    if (seen.fetch_add(1) == 0) {
      first.set_value();
      cancel_sent.wait();
    }
  });
  first.get_future().wait();
  engine.cancel(id);
  cancelled.set_value();
  for (int i = 0; i < 200 && !engine.pool_whole(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_TRUE(engine.pool_whole());
  EXPECT_LT(seen.load(), 40);
  auto refused = [&](SequenceRequest q, RefusalKind kind, const std::string& text) {
    try {
      engine.submit(q, [](const SequenceUpdate&) {});
      ADD_FAILURE() << "no refusal for " << text;
    } catch (const SequenceRefused& e) {
      EXPECT_EQ(e.kind, kind);
      EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
    }
  };
  refused({.prompt = {}}, RefusalKind::BadRequest, "the prompt is empty");
  refused({.prompt = {static_cast<int32_t>(cfg.vocab_size)}}, RefusalKind::BadRequest,
          "outside the vocabulary");
  refused({.prompt = {1}, .max_new_tokens = cfg.max_positions}, RefusalKind::TooLong,
          "maximum context length");
  SequenceRequest bad{.prompt = {1}};
  bad.sampling.top_p = 2;
  refused(bad, RefusalKind::BadRequest, "top_p");
  engine.shutdown(false);
}

TEST(ContinuousEngine, ARequestThatDoesNotFitTheQueueIsRefusedWholeAndQueuesNothing) {
  ModelConfig cfg = testing::tiny_gpt2();
  Allocator a;
  Transformer m(cfg, a);
  m.params().init_random(5);
  PagedKvCache cache(cfg, m.tp(), 64, 4, a);
  StepRunner runner(m, cache, nullptr, nullptr);
  ContinuousEngine engine(
      cfg, runner, {.scheduler = {.max_batched_tokens = 64, .max_running = 1}, .max_waiting = 4});
  // The engine thread waits in the first sequence's first update, so what is
  // submitted meanwhile stays queued and the count below is exact.
  std::promise<void> first, release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<int> seen{0};
  engine.submit({.prompt = {1, 2}, .max_new_tokens = 8}, [&](const SequenceUpdate&) {
    if (seen.fetch_add(1) == 0) {
      first.set_value();
      released.wait();
    }
  });
  first.get_future().wait();
  auto group = [](size_t k) {
    std::vector<Submission> g;
    for (size_t i = 0; i < k; ++i)
      g.push_back({{.prompt = {3, 4}, .max_new_tokens = 2}, [](const SequenceUpdate&) {}});
    return g;
  };
  EXPECT_EQ(engine.submit_all(group(3)).size(), 3u);
  try {
    engine.submit_all(group(2));
    ADD_FAILURE() << "two more sequences than the queue holds were accepted";
  } catch (const SequenceRefused& e) {
    EXPECT_EQ(e.kind, RefusalKind::QueueFull);
    EXPECT_NE(std::string(e.what()).find("3 sequences are waiting and this request adds 2; the "
                                         "limit is 4"),
              std::string::npos)
        << e.what();
  }
  // Nothing of the refused request holds a place: one more still fits.
  EXPECT_EQ(engine.submit_all(group(1)).size(), 1u);
  release.set_value();
  engine.shutdown(true);
  EXPECT_TRUE(engine.pool_whole());
  EXPECT_EQ(engine.counters().generated_tokens, 8 + 4 * 2);
}

}  // namespace
}  // namespace parallm::serve
