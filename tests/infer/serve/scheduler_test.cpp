// Tests of the continuous-batching scheduler (infer/serve/scheduler.h) with
// a simulated model: the "key" stored at position p is a hash of the
// sequence's tokens 0..p, and the "sampled" token a hash of all tokens so
// far. Every step checks that the plan keeps its budgets, that each entry's
// earlier positions hold exactly its own prefix's keys (shared prefix blocks
// included, so no block is ever overwritten under another sequence), and
// every run checks that each sequence generates what it would alone and that
// the pool is whole again at the end.
#include "infer/serve/scheduler.h"

#include <gtest/gtest.h>

#include <map>
#include <numeric>
#include <ostream>
#include <vector>

#include "base/error.h"
#include "base/rng.h"

namespace parallm {
namespace {

uint64_t prefix_key(const std::vector<int32_t>& t, int64_t p) {
  uint64_t h = 0x1234;
  for (int64_t i = 0; i <= p; ++i) h = mix64(h ^ static_cast<uint64_t>(t[i]));
  return h;
}

int32_t next_token(const std::vector<int32_t>& t) {
  return static_cast<int32_t>(prefix_key(t, static_cast<int64_t>(t.size()) - 1) % 50);
}

std::vector<int32_t> tokens(int64_t n, uint64_t seed) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) t[i] = static_cast<int32_t>(uniform_at(seed, i) * 50);
  return t;
}

// What a sequence generates alone: max_new tokens, each a function of all before.
std::vector<int32_t> expected(std::vector<int32_t> t, int64_t max_new) {
  for (int64_t i = 0; i < max_new; ++i) t.push_back(next_token(t));
  return t;
}

// The engine loop around a scheduler, with a KV "pool" of prefix keys.
struct Sim {
  Sim(const SchedulerConfig& cfg, int64_t blocks, int64_t bs)
      : pool(blocks, bs), sched(cfg, pool), kv(static_cast<size_t>(blocks * bs), 0) {}

  void add(uint64_t id, std::vector<int32_t> prompt, int64_t max_new) {
    max_new_[id] = max_new;
    want_[id] = expected(prompt, max_new);
    sched.add(id, std::move(prompt), max_new);
  }

  // One engine step; returns the plan it ran.
  StepPlan run_step() {
    StepPlan plan = sched.step();
    const SchedulerConfig& cfg = sched.config();
    EXPECT_LE(static_cast<int64_t>(plan.tokens.size()), cfg.max_batched_tokens);
    EXPECT_LE(sched.running(), cfg.max_running);
    const int64_t bs = pool.block_size();
    std::vector<int32_t> sampled;
    size_t off = 0;
    std::map<uint64_t, int> seen;
    for (const ScheduledSeq& e : plan.seqs) {
      EXPECT_EQ(++seen[e.id], 1) << "sequence " << e.id << " twice in one plan";
      EXPECT_GE(e.count, 1);
      EXPECT_EQ(static_cast<int64_t>(e.blocks.size()), (e.pos0 + e.count + bs - 1) / bs);
      const std::vector<int32_t>& t = sched.tokens(e.id);
      EXPECT_EQ(e.wants_logits, e.pos0 + e.count == static_cast<int64_t>(t.size()));
      for (int64_t i = 0; i < e.count; ++i) EXPECT_EQ(plan.tokens[off + i], t[e.pos0 + i]);
      off += static_cast<size_t>(e.count);
      auto slot = [&](int64_t p) { return static_cast<size_t>(e.blocks[p / bs] * bs + p % bs); };
      for (int64_t p = 0; p < e.pos0; ++p)
        EXPECT_EQ(kv[slot(p)], prefix_key(t, p)) << "seq " << e.id << " position " << p;
      for (int64_t p = e.pos0; p < e.pos0 + e.count; ++p) kv[slot(p)] = prefix_key(t, p);
      if (e.wants_logits) sampled.push_back(next_token(t));
    }
    EXPECT_EQ(off, plan.tokens.size());
    sched.complete(plan, sampled);
    for (const ScheduledSeq& e : plan.seqs) {
      if (!e.wants_logits || !sched.has(e.id)) continue;
      if (sched.generated_tokens(e.id) == max_new_[e.id]) {
        got_[e.id] = sched.tokens(e.id);
        EXPECT_TRUE(sched.remove(e.id));
      }
    }
    pool.check_invariants();
    return plan;
  }

  // Runs until idle; returns the number of steps.
  int run_all(int max_steps = 100000) {
    int steps = 0;
    while (!sched.idle()) {
      const StepPlan plan = run_step();
      EXPECT_FALSE(plan.empty()) << "no progress with " << sched.waiting() << " waiting";
      if (plan.empty() || ++steps > max_steps) break;
    }
    return steps;
  }

  void expect_all_done() {
    EXPECT_EQ(got_, want_);
    EXPECT_EQ(pool.used_blocks(), 0);
    EXPECT_EQ(pool.free_blocks(), pool.total());
  }

  BlockPool pool;
  Scheduler sched;
  std::vector<uint64_t> kv;
  std::map<uint64_t, int64_t> max_new_;
  std::map<uint64_t, std::vector<int32_t>> want_, got_;
};

struct LoadCase {
  int64_t blocks, bs, max_tokens, max_running;
  bool prefix;
  int preempts;  // 1: some, 0: none (the pool holds every running sequence), -1: either
};

void PrintTo(const LoadCase& c, std::ostream* os) {
  *os << c.blocks << " blocks of " << c.bs << ", budget " << c.max_tokens << ", running "
      << c.max_running << (c.prefix ? ", prefix cache" : "");
}

class SchedulerLoad : public ::testing::TestWithParam<LoadCase> {};

// 40 sequences of mixed lengths, some sharing a system prompt, arriving
// over time: whatever the pool and budgets, each gets its own tokens.
TEST_P(SchedulerLoad, EverySequenceGeneratesWhatItWouldAlone) {
  const LoadCase c = GetParam();
  Sim sim({c.max_tokens, c.max_running, c.prefix}, c.blocks, c.bs);
  const std::vector<int32_t> system = tokens(37, 99);
  uint64_t next = 0;
  int steps = 0;
  while (next < 40 || !sim.sched.idle()) {
    if (next < 40 && steps % 2 == 0) {
      const uint64_t id = next++;
      std::vector<int32_t> p = id % 3 == 0 ? system : std::vector<int32_t>{};
      const std::vector<int32_t> own = tokens(1 + static_cast<int64_t>(id * 7 % 45), 1000 + id);
      p.insert(p.end(), own.begin(), own.end());
      sim.add(id, p, 1 + static_cast<int64_t>(id * 5 % 17));
    }
    sim.run_step();
    ASSERT_LT(++steps, 20000);
  }
  sim.expect_all_done();
  const int64_t preemptions = sim.sched.counters().preemptions;
  if (c.preempts == 1) {
    EXPECT_GT(preemptions, 0);
  } else if (c.preempts == 0) {
    EXPECT_EQ(preemptions, 0);
  }
  if (c.prefix) {
    EXPECT_GT(sim.sched.counters().prefix_hits, 0);
  } else {
    EXPECT_EQ(sim.sched.counters().prefix_queries, 0);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Pools, SchedulerLoad,
    ::testing::Values(LoadCase{200, 16, 64, 16, true, 0}, LoadCase{200, 16, 64, 16, false, 0},
                      LoadCase{9, 16, 64, 16, true, 1},  // small pool: preemptions
                      LoadCase{9, 16, 64, 16, false, 1},
                      LoadCase{150, 1, 32, 8, true, -1},  // block size 1
                      LoadCase{40, 4, 8, 4, true, -1},    // tiny budget: long chunking
                      LoadCase{36, 3, 300, 64, true, 1}));

TEST(Scheduler, ChunksALongPromptInOrder) {
  Sim sim({32, 8, true}, 64, 16);
  sim.add(1, tokens(100, 1), 3);
  std::vector<std::pair<int64_t, int64_t>> chunks;
  for (int i = 0; i < 4; ++i) {
    const StepPlan p = sim.run_step();
    ASSERT_EQ(p.seqs.size(), 1u);
    chunks.push_back({p.seqs[0].pos0, p.seqs[0].count});
    EXPECT_EQ(p.seqs[0].wants_logits, i == 3);
  }
  EXPECT_EQ(chunks,
            (std::vector<std::pair<int64_t, int64_t>>{{0, 32}, {32, 32}, {64, 32}, {96, 4}}));
  // FIFO: a later prompt only gets what the earlier one leaves of the budget.
  sim.add(2, tokens(50, 2), 2);
  sim.add(3, tokens(10, 3), 2);
  StepPlan p = sim.run_step();  // seq 1 decodes, seq 2 takes the rest
  ASSERT_EQ(p.seqs.size(), 2u);
  EXPECT_EQ(p.seqs[0].id, 1u);
  EXPECT_EQ(p.seqs[0].count, 1);
  EXPECT_EQ(p.seqs[1].id, 2u);
  EXPECT_EQ(p.seqs[1].count, 31);
  p = sim.run_step();  // seq 1 done after 3 tokens; seq 2 continues, then seq 3 starts
  ASSERT_EQ(p.seqs.size(), 3u);
  EXPECT_EQ(p.seqs[0].id, 1u);
  EXPECT_EQ(p.seqs[1].id, 2u);
  EXPECT_EQ(p.seqs[1].pos0, 31);
  EXPECT_EQ(p.seqs[1].count, 19);
  EXPECT_EQ(p.seqs[2].id, 3u);
  EXPECT_EQ(p.seqs[2].count, 10);
  sim.run_all();
  sim.expect_all_done();
}

TEST(Scheduler, DecodesAreNeverStarvedByALongPrompt) {
  Sim sim({64, 8, true}, 400, 16);
  for (uint64_t id = 0; id < 3; ++id) sim.add(id, tokens(5, id), 40);
  sim.run_step();  // the three prompts prefill together
  sim.add(9, tokens(1000, 9), 2);
  for (int step = 0; step < 16; ++step) {
    const StepPlan p = sim.run_step();
    ASSERT_EQ(p.seqs.size(), 4u);
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(p.seqs[i].id, static_cast<uint64_t>(i));
      EXPECT_EQ(p.seqs[i].count, 1);
      EXPECT_TRUE(p.seqs[i].wants_logits);
    }
    EXPECT_EQ(p.seqs[3].id, 9u);
    EXPECT_EQ(p.seqs[3].pos0, step * 61);
    EXPECT_EQ(p.seqs[3].count, 61);
    EXPECT_FALSE(p.seqs[3].wants_logits);
  }
  sim.run_all();
  sim.expect_all_done();
}

TEST(Scheduler, CapsRunningSequences) {
  Sim sim({64, 2, true}, 100, 4);
  for (uint64_t id = 0; id < 5; ++id) sim.add(id, tokens(3, id), 4);
  const StepPlan p = sim.run_step();
  EXPECT_EQ(p.seqs.size(), 2u);
  EXPECT_EQ(sim.sched.running(), 2);
  EXPECT_EQ(sim.sched.waiting(), 3);
  sim.run_all();
  sim.expect_all_done();
}

// Two sequences grow until the pool runs out: the younger is preempted,
// goes back to the head of the queue, and is recomputed (with what it had
// generated) once the older one has finished.
TEST(Scheduler, PreemptsTheYoungestAndRecomputesItLater) {
  Sim sim({64, 4, false}, 4, 4);  // 16 positions in all
  sim.add(1, tokens(6, 1), 8);    // up to 13 positions: 4 blocks
  sim.add(2, tokens(5, 2), 4);
  sim.add(3, tokens(2, 3), 2);
  bool preempted = false;
  int64_t generated_before = -1;
  for (int step = 0; step < 20 && !preempted; ++step) {
    if (sim.sched.has(2)) generated_before = sim.sched.generated_tokens(2);
    const StepPlan p = sim.run_step();
    for (const ScheduledSeq& e : p.seqs) EXPECT_NE(e.id, 3u) << "admitted with the pool full";
    if (!p.preempted.empty()) {
      preempted = true;
      EXPECT_EQ(p.preempted, std::vector<uint64_t>{2});
      for (const ScheduledSeq& e : p.seqs) EXPECT_NE(e.id, 2u);
    }
  }
  ASSERT_TRUE(preempted);
  EXPECT_GT(generated_before, 0);
  EXPECT_EQ(sim.sched.counters().preemptions, 1);
  EXPECT_EQ(sim.sched.running(), 1);
  EXPECT_EQ(sim.sched.waiting(), 2);
  // Its generated tokens stay and are recomputed as part of its prompt.
  EXPECT_EQ(sim.sched.generated_tokens(2), generated_before);
  bool recomputed = false;
  while (!sim.sched.idle()) {
    const StepPlan p = sim.run_step();
    for (const ScheduledSeq& e : p.seqs)
      if (e.id == 2 && e.pos0 == 0) {
        recomputed = true;
        EXPECT_EQ(e.count, 5 + generated_before);
        EXPECT_TRUE(e.wants_logits);
      }
  }
  EXPECT_TRUE(recomputed);
  sim.expect_all_done();
}

TEST(Scheduler, PrefixHitsSkipPrefillButAlwaysComputeTheLastToken) {
  const int64_t bs = 16;
  Sim sim({256, 8, true}, 64, bs);
  const std::vector<int32_t> base = tokens(50, 5);
  sim.add(1, base, 1);
  sim.run_all();  // 3 full blocks cached (48 positions), then released
  EXPECT_EQ(sim.pool.cached_blocks(), 3);
  auto prefix = [&](int64_t n) { return std::vector<int32_t>(base.begin(), base.begin() + n); };
  struct Want {
    int64_t len, cached;
  };
  // 40: two cached blocks. 33: two blocks, one token left to compute.
  // 32: fully cached, but its last block is recomputed for the logits.
  // 10: shorter than a block.
  uint64_t id = 10;
  for (const Want w : {Want{40, 32}, Want{33, 32}, Want{32, 16}, Want{10, 0}, Want{50, 48}}) {
    sim.add(id, prefix(w.len), 2);
    const StepPlan p = sim.run_step();
    ASSERT_EQ(p.seqs.size(), 1u);
    EXPECT_EQ(p.seqs[0].pos0, w.cached) << "length " << w.len;
    EXPECT_EQ(p.seqs[0].cached_tokens, w.cached);
    EXPECT_EQ(p.seqs[0].count, w.len - w.cached);
    EXPECT_TRUE(p.seqs[0].wants_logits);
    EXPECT_EQ(sim.sched.cached_prompt_tokens(id), w.cached);
    sim.run_all();
    ++id;
  }
  sim.expect_all_done();
  const SchedulerCounters& c = sim.sched.counters();
  EXPECT_EQ(c.prefix_hits, 32 + 32 + 16 + 0 + 48);
  EXPECT_EQ(c.prefix_queries, 50 + 40 + 33 + 32 + 10 + 50);
}

TEST(Scheduler, SharesPrefixBlocksBetweenRunningSequences) {
  const int64_t bs = 4;
  Sim sim({64, 8, true}, 32, bs);
  const std::vector<int32_t> sys = tokens(12, 7);
  std::vector<int32_t> a = sys, b = sys;
  a.push_back(1);
  b.push_back(2);
  sim.add(1, a, 6);
  sim.run_step();
  sim.add(2, b, 6);
  const StepPlan p = sim.run_step();
  ASSERT_EQ(p.seqs.size(), 2u);
  EXPECT_EQ(p.seqs[1].cached_tokens, 12);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(p.seqs[0].blocks[i], p.seqs[1].blocks[i]);
  EXPECT_EQ(sim.pool.refcount(p.seqs[0].blocks[0]), 2);
  sim.run_all();
  sim.expect_all_done();
}

// Cached prompts are evicted least recently released first, and a prompt's
// tail before its head.
TEST(Scheduler, EvictsLeastRecentlyUsedPrefixesFirst) {
  const int64_t bs = 4;
  Sim sim({64, 8, true}, 6, bs);
  const std::vector<int32_t> a = tokens(9, 1), b = tokens(9, 2);
  sim.add(1, a, 1);
  sim.run_all();
  sim.add(2, b, 1);
  sim.run_all();
  EXPECT_EQ(sim.pool.cached_blocks(), 4);  // a's 2 blocks, then b's
  EXPECT_EQ(sim.pool.lookup(a, 2).blocks.size(), 2u);
  // A new prompt of 3 blocks takes the 2 blank blocks, then a's tail.
  sim.add(3, tokens(12, 3), 1);
  sim.run_step();
  EXPECT_EQ(sim.pool.lookup(a, 2).blocks.size(), 1u);
  EXPECT_EQ(sim.pool.lookup(b, 2).blocks.size(), 2u);
  sim.run_all();
  sim.expect_all_done();
  EXPECT_EQ(sim.pool.evictions(), 1);
}

TEST(Scheduler, RemoveFreesBlocksOfRunningAndWaitingSequences) {
  Sim sim({8, 4, true}, 20, 4);
  sim.add(1, tokens(20, 1), 5);
  sim.add(2, tokens(3, 2), 5);
  sim.run_step();  // seq 1 prefills 8 positions; seq 2 waits for budget
  EXPECT_EQ(sim.sched.running(), 1);
  EXPECT_EQ(sim.pool.used_blocks(), 2);
  EXPECT_TRUE(sim.sched.remove(1));
  EXPECT_EQ(sim.pool.used_blocks(), 0);
  EXPECT_TRUE(sim.sched.remove(2));
  EXPECT_FALSE(sim.sched.remove(2));
  EXPECT_FALSE(sim.sched.remove(77));
  EXPECT_TRUE(sim.sched.idle());
  EXPECT_TRUE(sim.sched.step().empty());
  // A cancel between step() and complete(): the entry is skipped.
  sim.add(3, tokens(5, 3), 3);
  const StepPlan p = sim.sched.step();
  EXPECT_TRUE(sim.sched.remove(3));
  sim.sched.complete(p, std::vector<int32_t>{4});
  EXPECT_EQ(sim.pool.used_blocks(), 0);
  sim.pool.check_invariants();
}

TEST(Scheduler, RefusesWhatCanNeverRun) {
  BlockPool pool(4, 4);
  Scheduler s({16, 4, true}, pool);
  EXPECT_THROW(s.add(1, {}, 3), Error);
  EXPECT_THROW(s.add(1, {1, 2}, 0), Error);
  EXPECT_THROW(s.add(1, tokens(10, 1), 8), Error);  // 17 positions > 16
  s.add(1, tokens(10, 1), 7);                       // 16 positions fit exactly
  EXPECT_THROW(s.add(1, {1}, 1), Error);            // a known id
  EXPECT_THROW(Scheduler({4, 8, true}, pool), Error);
  EXPECT_THROW(Scheduler({0, 0, true}, pool), Error);
  const StepPlan p = s.step();
  EXPECT_THROW(s.complete(p, std::vector<int32_t>{}), Error);  // one token wanted
}

}  // namespace
}  // namespace parallm
