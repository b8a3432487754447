// StaticBatchEngine on a small random model: every sequence of a batch of
// mixed prompts, lengths and sampling gets exactly the tokens generate()
// gives it alone; stop strings end a sequence where its text holds one;
// a cancelled sequence hears nothing more while the others go on; a full
// queue, a prompt too long and bad values are refused; shutdown ends every
// sequence with a finished update. Held rows (static-padded) change the
// work of each forward, never a sequence's tokens.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

#include "common/test_models.h"
#include "infer/generator.h"
#include "infer/serve/static_batch_engine.h"

namespace parallm {
namespace {

// Collects every sequence's updates by a key the test chooses (the engine's
// id is not known before submit returns, and the first update may be
// earlier); wait_for() blocks until the keyed sequences finished.
struct Collector {
  std::mutex mu;
  std::condition_variable cv;
  std::map<uint64_t, std::vector<SequenceUpdate>> got;
  std::map<uint64_t, bool> finished;

  SequenceSink sink(uint64_t key) {
    return [this, key](const SequenceUpdate& u) {
      std::lock_guard<std::mutex> lock(mu);
      got[key].push_back(u);
      if (u.finished) finished[key] = true;
      cv.notify_all();
    };
  }
  bool wait_for(const std::vector<uint64_t>& ids,
                std::chrono::seconds t = std::chrono::seconds(60)) {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, t, [&] {
      for (uint64_t id : ids)
        if (!finished[id]) return false;
      return true;
    });
  }
  std::vector<int32_t> tokens(uint64_t id) {
    std::lock_guard<std::mutex> lock(mu);
    std::vector<int32_t> t;
    for (const SequenceUpdate& u : got[id])
      for (const SampledToken& s : u.tokens) t.push_back(s.token);
    return t;
  }
  SequenceUpdate last(uint64_t id) {
    std::lock_guard<std::mutex> lock(mu);
    return got[id].back();
  }
};

// Ids -> letters, so stop strings have text to look at.
std::string letters(std::span<const int32_t> ids) {
  std::string s;
  for (int32_t t : ids) s += static_cast<char>('a' + t % 26);
  return s;
}

class StaticBatchEngineTest : public ::testing::Test {
 protected:
  StaticBatchEngineTest() : model(cfg(), alloc) { model.params().init_random(5); }
  static ModelConfig cfg() {
    ModelConfig c = testing::tiny_gpt2();
    c.init_std = 0.2;  // logits far apart: no near-ties
    return c;
  }
  StaticBatchEngine::Options opts(int64_t running = 3, int64_t waiting = 16, bool hold = false) {
    return {running, waiting, {}, letters, hold};
  }
  std::vector<int32_t> alone(const SequenceRequest& r) {
    GenerateOptions o;
    o.sampling = r.sampling;
    o.max_new_tokens = r.max_new_tokens;
    o.draw_ids = {r.choice};
    return generate(model, {r.prompt}, o)[0].tokens;
  }
  Allocator alloc;
  Transformer model;
  Collector col;
};

TEST_F(StaticBatchEngineTest, EachSequenceGetsWhatItGetsAlone) {
  for (const bool hold : {false, true}) {
    SCOPED_TRACE(hold ? "finished rows held (static-padded)" : "finished rows leave");
    Collector col;
    std::vector<SequenceRequest> reqs;
    for (int i = 0; i < 7; ++i) {
      SequenceRequest r;
      for (int j = 0; j < 3 + 4 * i; ++j) r.prompt.push_back((17 * i + 5 * j) % 1000);
      r.max_new_tokens = 4 + 3 * (i % 3);
      r.sampling.temperature = i % 2 ? 0.0 : 0.9;
      r.sampling.top_k = i % 3 == 0 ? 20 : 0;
      r.sampling.seed = 11;
      r.sampling.logprobs = 2;
      r.choice = i;
      reqs.push_back(r);
    }
    // A long prompt with few new tokens beside a short one with many: each
    // fits the context (64) alone, though longest prompt + most new would not.
    SequenceRequest lp = reqs[1], mn = reqs[1];
    lp.prompt.assign(50, 7);
    lp.max_new_tokens = 4;
    mn.prompt = {3, 4};
    mn.max_new_tokens = 55;
    reqs.insert(reqs.begin() + 1, {lp, mn});
    int64_t total = 0;
    for (const SequenceRequest& r : reqs) total += r.max_new_tokens;
    std::vector<uint64_t> ids(reqs.size());
    {
      StaticBatchEngine engine(model, opts(3, 16, hold));
      for (size_t i = 0; i < reqs.size(); ++i) {
        engine.submit(reqs[i], col.sink(i));
        ids[i] = i;
      }
      ASSERT_TRUE(col.wait_for(ids));
      EXPECT_EQ(engine.counters().generated_tokens, total);
    }
    for (size_t i = 0; i < reqs.size(); ++i) {
      EXPECT_EQ(col.tokens(ids[i]), alone(reqs[i])) << "sequence " << i;
      EXPECT_EQ(col.tokens(ids[i]).size(), static_cast<size_t>(reqs[i].max_new_tokens));
      const SequenceUpdate last = col.last(ids[i]);
      EXPECT_EQ(last.finish, FinishReason::Length);
      EXPECT_EQ(last.prompt_tokens, static_cast<int64_t>(reqs[i].prompt.size()));
      EXPECT_EQ(last.tokens[0].top.size(), 2u);
    }
  }
}

// Rows per forward with and without held rows, for prompts A (3 tokens, 3
// new), B (2 tokens, 9 new) and C (60 tokens, 2 new; context 64, so its
// held row leaves once it holds 64 positions, after 5 forwards).
TEST_F(StaticBatchEngineTest, HeldRowsChangeTheWorkNotTheTokens) {
  const std::vector<std::vector<int32_t>> prompts = {
      {1, 2, 3}, {4, 5}, std::vector<int32_t>(60, 9)};
  auto run = [&](bool hold, std::vector<int64_t>* rows) {
    GenerateOptions o;
    o.sampling.temperature = 0;
    o.sequence_max_new_tokens = {3, 9, 2};
    o.hold_finished_rows = hold;
    o.on_logits = [&](const std::vector<int>& seqs, const Tensor& logits) {
      EXPECT_EQ(logits.shape()[0], static_cast<int64_t>(seqs.size()));
      rows->push_back(static_cast<int64_t>(seqs.size()));
    };
    GenerationStats st;
    std::vector<Generation> g = generate(model, prompts, o, &st);
    EXPECT_EQ(st.decode_tokens, 3 + 9 + 2 - 3);  // tokens generated after the prefill's
    return g;
  };
  std::vector<int64_t> leave_rows, held_rows;
  const std::vector<Generation> leave = run(false, &leave_rows), held = run(true, &held_rows);
  EXPECT_EQ(leave_rows, (std::vector<int64_t>{3, 3, 2, 1, 1, 1, 1, 1, 1}));
  EXPECT_EQ(held_rows, (std::vector<int64_t>{3, 3, 3, 3, 3, 2, 2, 2, 2}));
  for (size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_EQ(held[i].tokens, leave[i].tokens) << "sequence " << i;
    EXPECT_EQ(held[i].finish, FinishReason::Length);
  }
  EXPECT_EQ(held[1].tokens.size(), 9u);
}

TEST_F(StaticBatchEngineTest, StopStringsAndEos) {
  SequenceRequest r;
  r.prompt = {1, 2, 3};
  r.max_new_tokens = 12;
  r.sampling.temperature = 0;
  const std::vector<int32_t> free_run = alone(r);
  const std::string text = letters(free_run);
  // A stop string made of the 3rd and 4th tokens' letters, where it first occurs.
  const std::string stop = text.substr(2, 2);
  const size_t at = text.find(stop);
  uint64_t id_stop = 0, id_eos = 0;
  StaticBatchEngine::Options o = opts();
  o.eos_ids = {free_run[5]};
  SequenceRequest with_stop = r;
  with_stop.stop_strings = {stop};
  {
    StaticBatchEngine engine(model, o);
    id_stop = 1;
    id_eos = 2;
    engine.submit(with_stop, col.sink(id_stop));
    engine.submit(r, col.sink(id_eos));
    ASSERT_TRUE(col.wait_for({id_stop, id_eos}));
  }
  const size_t first_eos =
      std::find(free_run.begin(), free_run.end(), free_run[5]) - free_run.begin();
  ASSERT_LT(at + 1, first_eos) << "the stop string must end before the EOS: " << text;
  EXPECT_EQ(col.last(id_stop).finish, FinishReason::Stop);
  EXPECT_EQ(col.last(id_stop).text_end, at);
  EXPECT_EQ(col.tokens(id_stop).size(), at + 2);  // ends on the token that completes it
  EXPECT_EQ(col.last(id_eos).finish, FinishReason::Eos);
  EXPECT_EQ(col.tokens(id_eos),
            std::vector<int32_t>(free_run.begin(), free_run.begin() + first_eos + 1));
}

TEST_F(StaticBatchEngineTest, CancelledSequenceHearsNothingMore) {
  SequenceRequest longer;
  longer.prompt = {4, 5};
  longer.max_new_tokens = 40;
  longer.sampling.temperature = 0;
  std::atomic<uint64_t> a{0};
  const uint64_t b = 1;
  std::atomic<int> a_updates{0};
  StaticBatchEngine* eng = nullptr;
  SequenceSink sink_a = [&](const SequenceUpdate& u) {
    // Cancel from another thread after the first token, as the HTTP side
    // would; waiting for it here makes the step it lands on certain.
    if (++a_updates == 1)
      std::thread([&] {
        while (a == 0) std::this_thread::yield();  // submit may not have returned yet
        eng->cancel(a);
      }).join();
    EXPECT_FALSE(u.finished);
  };
  {
    StaticBatchEngine engine(model, opts());
    eng = &engine;
    a = engine.submit(longer, sink_a);
    engine.submit(longer, col.sink(b));
    ASSERT_TRUE(col.wait_for({b}));
  }
  EXPECT_EQ(col.tokens(b).size(), 40u);
  EXPECT_EQ(a_updates.load(), 1);  // nothing after the cancel, not even a finished update
}

TEST_F(StaticBatchEngineTest, Refusals) {
  StaticBatchEngine::Options o = opts(1, 2);
  StaticBatchEngine engine(model, o);
  auto kind_of = [&](const SequenceRequest& r) {
    try {
      engine.submit(r, [](const SequenceUpdate&) {});
    } catch (const SequenceRefused& e) {
      return static_cast<int>(e.kind);
    }
    return -1;
  };
  SequenceRequest ok;
  ok.prompt = {1, 2, 3};
  ok.max_new_tokens = 2;
  SequenceRequest too_long = ok;
  too_long.max_new_tokens = 62;  // 3 + 62 > 64 positions
  EXPECT_EQ(kind_of(too_long), static_cast<int>(RefusalKind::TooLong));
  SequenceRequest bad = ok;
  bad.prompt = {1, 5000};
  EXPECT_EQ(kind_of(bad), static_cast<int>(RefusalKind::BadRequest));
  bad = ok;
  bad.sampling.top_p = 2.0;
  EXPECT_EQ(kind_of(bad), static_cast<int>(RefusalKind::BadRequest));
  bad = ok;
  bad.prompt.clear();
  EXPECT_EQ(kind_of(bad), static_cast<int>(RefusalKind::BadRequest));
  bad = ok;
  bad.stop_strings = {""};
  EXPECT_EQ(kind_of(bad), static_cast<int>(RefusalKind::BadRequest));
}

TEST_F(StaticBatchEngineTest, AFullQueueRefusesAndShutdownEndsEverySequence) {
  SequenceRequest r;
  r.prompt = {1, 2, 3};
  r.max_new_tokens = 60;
  r.sampling.temperature = 0;
  std::vector<uint64_t> ids(5);
  StaticBatchEngine engine(model, opts(1, 2));
  int accepted = 0, refused = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    try {
      engine.submit(r, col.sink(static_cast<uint64_t>(accepted)));
      ids[static_cast<size_t>(accepted)] = static_cast<uint64_t>(accepted);
      ++accepted;
    } catch (const SequenceRefused& e) {
      EXPECT_EQ(e.kind, RefusalKind::QueueFull);
      ++refused;
    }
  }
  // One may have started running at once (freeing its queue place), so 2 or 3 fit.
  EXPECT_GE(accepted, 2);
  EXPECT_LE(accepted, 3);
  engine.shutdown(false);
  ids.resize(static_cast<size_t>(accepted));
  ASSERT_TRUE(col.wait_for(ids, std::chrono::seconds(1)));  // already done
  for (uint64_t id : ids) EXPECT_EQ(col.last(id).finish, FinishReason::Length);
  EXPECT_THROW(engine.submit(r, [](const SequenceUpdate&) {}), SequenceRefused);
  const EngineCounters c = engine.counters();
  EXPECT_EQ(c.running, 0);
  EXPECT_EQ(c.waiting, 0);
}

}  // namespace
}  // namespace parallm
