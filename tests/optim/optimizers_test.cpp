// The optimizer interface (src/optim): state bytes per optimizer under
// MemTag::Optimizer (SGD 0, momentum 4N, Adam/AdamW 8N, Muon 4 per block
// matrix element + 8 per other), named state buffers that cover the owned
// range exactly once, element-wise optimizers giving bitwise the same result
// on two ZeRO-like half ranges as on the whole range, Muon refusing a shard
// without the group that owns the rest, and Newton-Schulz's
// output being near-orthogonal and transpose-consistent. The numbers
// against PyTorch are in tests/reference (compare_optimizers.py).
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <vector>

#include "base/rng.h"
#include "optim/adam.h"
#include "optim/muon.h"
#include "optim/newton_schulz.h"
#include "optim/optimizer.h"

namespace parallm {
namespace {

void build(ParameterSet& ps) {
  ps.add({.name = "embed.weight", .shape = {21, 16}, .global_shape = {21, 16}});
  ps.add({.name = "layers.0.norm1.weight",
          .shape = {16},
          .global_shape = {16},
          .init = InitKind::Ones,
          .weight_decay = false});
  ps.add({.name = "layers.0.attn.q.weight", .shape = {24, 16}, .global_shape = {24, 16}});
  ps.add(
      {.name = "layers.0.attn.q.bias", .shape = {24}, .global_shape = {24}, .weight_decay = false});
  ps.add({.name = "layers.0.mlp.down.weight", .shape = {16, 40}, .global_shape = {16, 40}});
}

void fill_grads(const ParameterSet& ps, int step) {
  for (int i = 0; i < ps.size(); ++i) {
    const uint64_t key = stream_key(step, ps.spec(i).name);
    for (int64_t j = 0; j < ps.numel(i); ++j)
      ps.grad({i})[j] = static_cast<float>(0.01 * normal_at(key, j));
  }
}

OptimizerConfig config(OptimizerKind k) {
  OptimizerConfig c;
  c.kind = k;
  c.nesterov = k == OptimizerKind::SGDMomentum;
  return c;
}

const OptimizerKind kAll[] = {OptimizerKind::SGD, OptimizerKind::SGDMomentum, OptimizerKind::Adam,
                              OptimizerKind::AdamW, OptimizerKind::Muon};

TEST(Optimizers, StateBytesAreTaggedOptimizer) {
  for (OptimizerKind k : kAll) {
    Allocator alloc;
    ParameterSet ps;
    build(ps);
    ps.allocate(alloc);
    const int64_t N = ps.total_numel();
    auto opt = make_optimizer(config(k), ps, alloc, 0, N, N);
    int64_t matrix = 0;
    for (int i = 0; i < ps.size(); ++i)
      if (Muon::is_matrix(ps.spec(i))) matrix += ps.numel(i);
    EXPECT_EQ(matrix, 24 * 16 + 16 * 40);
    const int64_t want = k == OptimizerKind::SGD           ? 0
                         : k == OptimizerKind::SGDMomentum ? 4 * N
                         : k == OptimizerKind::Muon        ? 4 * matrix + 8 * (N - matrix)
                                                           : 8 * N;
    EXPECT_EQ(alloc.current(MemTag::Optimizer), want) << optimizer_name(k);
    EXPECT_EQ(opt->state_bytes(), want) << optimizer_name(k);
    EXPECT_EQ(opt->kind(), k);
    // Each state name covers the flat range once, spans in order.
    std::map<std::string, int64_t> covered;
    for (const OptimizerState& s : opt->state()) {
      int64_t n = 0, last = 0;
      for (const FlatSpan& f : s.spans) {
        EXPECT_GE(f.begin, last) << s.name;
        last = f.end;
        n += f.size();
      }
      EXPECT_LE(n, s.tensor->numel()) << s.name;
      covered[s.name] += n;
    }
    if (k == OptimizerKind::Muon) {
      EXPECT_EQ(covered["momentum_buffer"] + covered["exp_avg"], N);
    }
  }
}

TEST(Optimizers, ElementWiseOnHalfRangesEqualsWhole) {
  for (OptimizerKind k : {OptimizerKind::SGD, OptimizerKind::SGDMomentum, OptimizerKind::Adam,
                          OptimizerKind::AdamW}) {
    Allocator alloc;
    ParameterSet whole, split;
    build(whole);
    build(split);
    whole.allocate(alloc);
    split.allocate(alloc);
    whole.init_random(1);
    split.init_random(1);
    const int64_t N = whole.total_numel(), half = N / 2 + 5;  // cuts a matrix
    auto a = make_optimizer(config(k), whole, alloc, 0, N, N);
    auto b0 = make_optimizer(config(k), split, alloc, 0, half, half);
    auto b1 = make_optimizer(config(k), split, alloc, half, N, half);
    for (int s = 0; s < 3; ++s) {
      fill_grads(whole, s);
      fill_grads(split, s);
      a->step(whole, 1e-2);
      b0->step(split, 1e-2);
      b1->step(split, 1e-2);
    }
    const float* x = whole.flat_values().data<float>();
    const float* y = split.flat_values().data<float>();
    for (int64_t i = 0; i < N; ++i) ASSERT_EQ(x[i], y[i]) << optimizer_name(k) << " at " << i;
  }
}

TEST(Optimizers, MuonOnAShardNeedsItsGroup) {
  Allocator alloc;
  ParameterSet ps;
  build(ps);
  ps.allocate(alloc);
  const int64_t N = ps.total_numel();
  try {
    make_optimizer(config(OptimizerKind::Muon), ps, alloc, 0, N / 2, N / 2);
    FAIL() << "accepted a shard without a shard group";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("whole matrices"), std::string::npos) << e.what();
  }
}

TEST(Optimizers, BadNamesAndValues) {
  EXPECT_THROW(optimizer_from_name("lion"), Error);
  EXPECT_EQ(optimizer_from_name("sgd-momentum"), OptimizerKind::SGDMomentum);
  OptimizerConfig c;
  c.kind = OptimizerKind::Adam;
  c.nesterov = true;
  EXPECT_THROW(c.validate(), Error);
  c = OptimizerConfig{};
  c.muon_ns_steps = 0;
  EXPECT_THROW(c.validate(), Error);
}

// Adam and AdamW are one optimizer with two decay rules: the same state, the
// same names; with no decay they take bitwise the same steps, with decay
// AdamW's parameters end up different from Adam's (decoupled vs L2).
TEST(Optimizers, AdamAndAdamWDifferOnlyInTheDecayRule) {
  auto run = [](OptimizerKind k, double wd) {
    Allocator alloc;
    ParameterSet ps;
    build(ps);
    ps.allocate(alloc);
    ps.init_random(3);
    OptimizerConfig c = config(k);
    c.weight_decay = wd;
    Adam opt(ps, c, alloc);
    EXPECT_EQ(opt.kind(), k);
    EXPECT_EQ(opt.state().size(), 2u);
    for (int step = 0; step < 3; ++step) {
      fill_grads(ps, step);
      opt.step(ps, 1e-2);
    }
    const float* v = ps.flat_values().data<float>();
    return std::vector<float>(v, v + ps.total_numel());
  };
  EXPECT_EQ(run(OptimizerKind::Adam, 0.0), run(OptimizerKind::AdamW, 0.0));
  EXPECT_NE(run(OptimizerKind::Adam, 0.1), run(OptimizerKind::AdamW, 0.1));
  Allocator alloc;
  ParameterSet ps;
  build(ps);
  ps.allocate(alloc);
  EXPECT_THROW(Adam(ps, config(OptimizerKind::SGD), alloc), Error);
}

TEST(NewtonSchulz, NearOrthogonalAndTransposeConsistent) {
  Allocator alloc;
  const int64_t R = 12, C = 30;
  std::vector<float> g(R * C), gt(R * C);
  for (int64_t i = 0; i < R * C; ++i) g[i] = static_cast<float>(normal_at(9, i));
  for (int64_t i = 0; i < R; ++i)
    for (int64_t j = 0; j < C; ++j) gt[j * R + i] = g[i * C + j];
  newton_schulz_orthogonalise(g.data(), R, C, 5, alloc);
  newton_schulz_orthogonalise(gt.data(), C, R, 5, alloc);
  for (int64_t i = 0; i < R; ++i)
    for (int64_t j = 0; j < C; ++j) EXPECT_EQ(g[i * C + j], gt[j * R + i]);
  // Rows of O are near-orthonormal: the quintic leaves singular values in
  // about [0.68, 1.13] rather than at 1, so diagonals within 0.35 of 1 and
  // off-diagonals small.
  for (int64_t a = 0; a < R; ++a)
    for (int64_t b = 0; b < R; ++b) {
      double d = 0;
      for (int64_t j = 0; j < C; ++j) d += double(g[a * C + j]) * g[b * C + j];
      if (a == b)
        EXPECT_NEAR(d, 1.0, 0.35) << a;
      else
        EXPECT_NEAR(d, 0.0, 0.35) << a << "," << b;
    }
  EXPECT_EQ(alloc.current(MemTag::Workspace), 0);
}

}  // namespace
}  // namespace parallm
