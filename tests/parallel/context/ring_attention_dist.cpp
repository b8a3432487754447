// The context-parallel attention core alone against full causal attention
// on one process (forward output, and dq, dk, dv of a random upstream
// gradient), at cp = world size (2 or 4) for ring, Ulysses (a2a) and the
// hybrid (a2a+ring, U 2 at cp 4), with and without load balancing, with
// and without a sliding window (chunk pairs wholly outside it skipped); and the
// counted attention work per rank: within 1% under load balancing, with the
// unbalanced split's imbalance printed beside it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <thread>

#include "cp_env.h"
#include "kernels/cpu/attention.h"
#include "nn/layer_context.h"
#include "parallel/context/context_attention.h"

namespace parallm::cp_test {
namespace {

constexpr int64_t kB = 2, kHq = 8, kHkv = 4, kD = 8;

std::vector<float> randn(int64_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = dist(gen);
  return v;
}

// Rows of this rank's chunks of x (B, T, row).
std::vector<float> local_rows(const std::vector<float>& x, const CpChunks& ch, int r, int64_t row) {
  std::vector<float> out;
  const auto p0 = ch.pos0_of(r);
  for (int64_t b = 0; b < kB; ++b)
    for (int64_t c : p0)
      out.insert(out.end(), x.begin() + (b * ch.T + c) * row,
                 x.begin() + (b * ch.T + c + ch.chunk_len()) * row);
  return out;
}

void expect_close(const std::vector<float>& got, const std::vector<float>& ref,
                  const std::string& what) {
  ASSERT_EQ(got.size(), ref.size()) << what;
  for (size_t i = 0; i < ref.size(); ++i)
    ASSERT_NEAR(got[i], ref[i], 1e-5 * (1.0 + std::abs(ref[i]))) << what << " at " << i;
}

struct CoreResult {
  int64_t pairs = 0;
  comm::OpTally recv;  // the world's receives during forward and backward
};

// late_rank sleeps kLateMs before its forward (-1: none). Long enough that
// the ranks it keeps waiting are still waiting when they reach its block:
// with 4 ranks on 2 cores beside another test's ranks, rank 0's own work
// before that receive once took over 300 ms (it saw 0.1 ms of wait).
constexpr int kLateMs = 1000;

CoreResult check_against_full(CpGroup g, int64_t T, const std::string& what, int64_t window = 0,
                              int late_rank = -1) {
  comm::Communicator& world = *env().world;
  g.comm = &world;
  const CpSubgroups subs = make_cp_subgroups(g);
  const int cp = g.size(), r = g.rank();
  const double scale = 1.0 / std::sqrt(static_cast<double>(kD));
  const int64_t qrow = kHq * kD, krow = kHkv * kD;
  std::vector<float> q = randn(kB * T * qrow, 1), k = randn(kB * T * krow, 2),
                     v = randn(kB * T * krow, 3), dout = randn(kB * T * qrow, 4);
  // One-process reference.
  cpu::AttnDims full{.B = kB, .Tq = T, .Tk = T, .Hq = kHq, .Hkv = kHkv, .D = kD};
  full.window = window;
  std::vector<float> out(q.size()), lse(kB * kHq * T), dq(q.size()), dk(k.size()), dv(v.size());
  cpu::attention_forward(out.data(), lse.data(), q.data(), k.data(), v.data(), full, scale);
  cpu::attention_backward(dq.data(), dk.data(), dv.data(), dout.data(), q.data(), k.data(),
                          v.data(), out.data(), lse.data(), full, scale);
  // This rank's share.
  const CpChunks ch = cp_chunks(T, cp, g.load_balance);
  const int64_t Tl = ch.local_len();
  Allocator alloc;
  ParameterSet params;
  const std::vector<int64_t> pos = ch.positions_of(r);
  LayerContext c{alloc, params, kB, Tl, pos.data()};
  auto tensor = [&](const std::vector<float>& x, int64_t row) {
    Tensor t = c.activation({kB, Tl, row});
    std::copy(x.begin(), x.end(), t.data<float>());
    return t;
  };
  Tensor lq = tensor(local_rows(q, ch, r, qrow), qrow);
  Tensor lk = tensor(local_rows(k, ch, r, krow), krow);
  Tensor lv = tensor(local_rows(v, ch, r, krow), krow);
  Tensor att = c.activation({kB, Tl, qrow});
  ContextAttention core(g, kHq, kHkv, kD);
  cpu::AttnDims base{.B = kB, .Tq = Tl, .Tk = Tl, .Hq = kHq, .Hkv = kHkv, .D = kD};
  base.window = window;
  AttnWork work;
  const comm::CommCounters before = world.counters();
  if (r == late_rank) std::this_thread::sleep_for(std::chrono::milliseconds(kLateMs));
  ContextAttention::Saved s = core.forward(c, att, lq, lk, lv, base, scale, &work);
  std::vector<float> got_out(att.data<float>(), att.data<float>() + att.numel());
  expect_close(got_out, local_rows(out, ch, r, qrow), what + " forward");
  std::vector<float> ldout = local_rows(dout, ch, r, qrow);
  std::vector<float> gq(kB * Tl * qrow), gk(kB * Tl * krow), gv(kB * Tl * krow);
  core.backward(c, gq.data(), gk.data(), gv.data(), ldout.data(), att.data<float>(), s, base,
                scale);
  expect_close(gq, local_rows(dq, ch, r, qrow), what + " dq");
  expect_close(gk, local_rows(dk, ch, r, krow), what + " dk");
  expect_close(gv, local_rows(dv, ch, r, krow), what + " dv");
  return {work.pairs, (world.counters() - before).of(comm::OpKind::Recv)};
}

std::vector<CpGroup> modes_for(int world) {
  std::vector<CpGroup> out{{.mode = CpComm::Ring, .ulysses_degree = 1},
                           {.mode = CpComm::AllToAll, .ulysses_degree = world}};
  if (world == 4) out.push_back({.mode = CpComm::Hybrid, .ulysses_degree = 2});
  return out;
}

TEST(ContextAttentionCore, MatchesFullAttention) {
  const int world = env().world->size();
  if (world != 2 && world != 4) GTEST_SKIP() << "runs at np 2 and 4";
  for (CpGroup g : modes_for(world))
    for (bool balanced : {true, false})
      for (int64_t T : {int64_t{8} * world, int64_t{24} * world}) {
        g.load_balance = balanced;
        check_against_full(g, T,
                           fmt::format("cp {} {} U {} balanced {} T {}", world,
                                       cp_comm_name(g.mode), g.ulysses_degree, balanced, T));
      }
}

// Sliding windows (Mistral) by global position: of 1, shorter than a chunk
// (whole chunk pairs fall outside it), longer than a chunk, and of T - 1.
TEST(ContextAttentionCore, SlidingWindowMatchesFullAttention) {
  const int world = env().world->size();
  if (world != 2 && world != 4) GTEST_SKIP() << "runs at np 2 and 4";
  const int64_t T = int64_t{24} * world;  // chunks of 6 (load-balanced) or 12 tokens
  for (CpGroup g : modes_for(world))
    for (bool balanced : {true, false})
      for (int64_t window : {int64_t{1}, int64_t{4}, int64_t{9}, T - 1}) {
        g.load_balance = balanced;
        check_against_full(g, T,
                           fmt::format("cp {} {} U {} balanced {} T {} window {}", world,
                                       cp_comm_name(g.mode), g.ulysses_degree, balanced, T, window),
                           window);
      }
}

// Counted causal (query, key) pairs per rank under ring attention: equal
// (within 1%) with Megatron's chunk order, skewed without it.
TEST(ContextAttentionCore, LoadBalancedWorkIsEven) {
  const int world = env().world->size();
  if (world != 2 && world != 4) GTEST_SKIP() << "runs at np 2 and 4";
  const int64_t T = 64 * world;
  for (bool balanced : {true, false}) {
    CpGroup g{.mode = CpComm::Ring, .load_balance = balanced};
    const int64_t mine = check_against_full(g, T, "work").pairs;
    std::vector<int64_t> all(static_cast<size_t>(world));
    env().world->all_gather(&mine, all.data(), 1, DType::I64);
    const auto [lo, hi] = std::minmax_element(all.begin(), all.end());
    const double imbalance = static_cast<double>(*hi) / static_cast<double>(*lo) - 1.0;
    int64_t total = 0;
    for (int64_t p : all) total += p;
    EXPECT_EQ(total, kB * kHq * T * (T + 1) / 2);  // every causal pair exactly once
    if (env().world->rank() == 0)
      std::printf("[ cp work ] cp %d T %lld %s: pairs per rank max/min - 1 = %.4f%%\n", world,
                  static_cast<long long>(T), balanced ? "load-balanced" : "contiguous",
                  100.0 * imbalance);
    if (balanced)
      EXPECT_LE(imbalance, 0.01);
    else
      EXPECT_GT(imbalance, 0.5);
  }
}

// Ring messages carry their post time: a rank whose ring predecessor starts
// late counts that wait as peer wait (skew), not as transfer.
TEST(ContextAttentionCore, WaitingForALatePeerIsPeerWait) {
  const int world = env().world->size();
  if (world != 2 && world != 4) GTEST_SKIP() << "runs at np 2 and 4";
  const int late = world - 1;  // rank 0's predecessor on the ring
  const comm::OpTally t =
      check_against_full({.mode = CpComm::Ring}, 8 * world, "late peer", 0, late).recv;
  if (env().world->rank() != 0) return;
  std::printf("[ cp wait ] cp %d, rank %d late by %d ms: rank 0 blocked %.1f ms, of it peer "
              "wait %.1f ms\n", world, late, kLateMs, t.blocked_ms(), t.peer_wait_ms());
  EXPECT_GE(t.peer_wait_ms(), 0.8 * kLateMs);
  EXPECT_LE(t.peer_wait_ns, t.blocked_ns);
  EXPECT_LT(t.blocked_ms() - t.peer_wait_ms(), 0.5 * kLateMs);  // the bytes are tiny
}

}  // namespace
}  // namespace parallm::cp_test
