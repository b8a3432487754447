// The tensor- and sequence-parallel mappings (parallel/tensor/mappings.h)
// one by one at tp 2 and 4, as Megatron's test_mappings.py checks them:
// each forward against its definition computed locally from every rank's
// (deterministic) input, and each backward against the forward through the
// adjoint identity sum_r <dy_r, f(x)_r> == sum_r <b(dy)_r, x_r>, which holds
// exactly when b is the transpose of f (a replicated tensor is counted once).
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "parallel/tensor/mappings.h"
#include "tp_env.h"

namespace parallm::tp_test {
namespace {

constexpr int64_t kRows = 4, kCols = 8;  // divisible by tp 2 and 4

// Rank r's input number `salt`: distinct per rank and per element.
std::vector<float> input(int r, int salt, int64_t n) {
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = std::sin(0.37f * i + 1.3f * r + 0.71f * salt);
  return v;
}

double dot(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += double(a[i]) * b[i];
  return s;
}

void expect_near_all(const std::vector<float>& got, const std::vector<float>& want,
                     const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], 1e-5) << what << " [" << i << "]";
}

// Runs body(group) on tp groups of size t tiling the first ranks of the
// world; every world rank takes part in the split.
template <class Body>
void on_tp_groups(int t, bool sp, Body body) {
  comm::Communicator* world = env().world;
  const int r = world->rank();
  const bool in = r < world->size() / t * t;
  std::unique_ptr<comm::Communicator> tp = world->split(in ? r / t : -1, r, "tp");
  if (!in) return;
  body(TpGroup{.comm = tp.get(), .sequence_parallel = sp});
}

// sum over the group of a rank's local scalar.
double group_sum(const TpGroup& g, double x) {
  g.comm->all_reduce(&x, 1, DType::F64, comm::ReduceOp::Sum);
  return x;
}

class Mappings : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    if (env().world->size() < GetParam()) GTEST_SKIP() << "needs " << GetParam() << " ranks";
  }
};

TEST_P(Mappings, ReduceFromAndCopyToAreAllReduceAndIdentity) {
  const int t = GetParam();
  on_tp_groups(t, false, [&](const TpGroup& g) {
    const int64_t n = kRows * kCols;
    std::vector<float> x = input(g.rank(), 0, n), want(n, 0.0f);
    for (int q = 0; q < t; ++q)
      for (int64_t i = 0; i < n; ++i) want[i] += input(q, 0, n)[i];
    reduce_from_tp_region(g, x.data(), n);
    expect_near_all(x, want, "reduce_from forward");
    // copy_to's backward is the same sum (its forward is the identity).
    std::vector<float> dx = input(g.rank(), 0, n);
    copy_to_tp_region_backward(g, dx.data(), n);
    expect_near_all(dx, want, "copy_to backward");
  });
}

TEST_P(Mappings, ScatterAndGatherAlongColumnsAreTransposes) {
  const int t = GetParam();
  on_tp_groups(t, false, [&](const TpGroup& g) {
    const int64_t cl = kCols / t, r = g.rank();
    // scatter: the replicated full x -> this rank's block of columns.
    std::vector<float> x = input(0, 1, kRows * kCols), out(kRows * cl);
    scatter_to_tp_region(g, out.data(), x.data(), kRows, kCols);
    std::vector<float> want(kRows * cl);
    for (int64_t i = 0; i < kRows; ++i)
      for (int64_t j = 0; j < cl; ++j) want[i * cl + j] = x[i * kCols + r * cl + j];
    expect_near_all(out, want, "scatter forward");
    // gather: every rank's block -> the full row.
    std::vector<float> local = input(r, 2, kRows * cl), full(kRows * kCols);
    gather_from_tp_region(g, full.data(), local.data(), kRows, cl);
    for (int q = 0; q < t; ++q) {
      const std::vector<float> lq = input(q, 2, kRows * cl);
      for (int64_t i = 0; i < kRows; ++i)
        for (int64_t j = 0; j < cl; ++j)
          EXPECT_NEAR(full[i * kCols + q * cl + j], lq[i * cl + j], 1e-6) << "gather forward";
    }
    // Adjoint: scatter's backward is gather. <dy_r, scatter(x)_r> summed over
    // ranks equals <gather(dy), x> (x replicated: counted once).
    std::vector<float> dy = input(r, 3, kRows * cl), gdy(kRows * kCols);
    gather_from_tp_region(g, gdy.data(), dy.data(), kRows, cl);
    EXPECT_NEAR(group_sum(g, dot(dy, out)), dot(gdy, x), 1e-4) << "scatter backward";
    // gather's backward is scatter: sum_r <dY, gather(l)> (dY replicated)
    // equals sum_r <scatter(dY)_r, l_r>.
    std::vector<float> dY = input(0, 4, kRows * kCols), sdY(kRows * cl);
    scatter_to_tp_region(g, sdY.data(), dY.data(), kRows, kCols);
    EXPECT_NEAR(dot(dY, full), group_sum(g, dot(sdY, local)), 1e-4) << "gather backward";
  });
}

TEST_P(Mappings, SequenceGatherAndReduceScatterAreTransposes) {
  const int t = GetParam();
  on_tp_groups(t, true, [&](const TpGroup& g) {
    const int64_t rl = kRows / t, r = g.rank();
    // gather_from_sequence: row blocks of every rank -> all rows.
    std::vector<float> local = input(r, 5, rl * kCols), full(kRows * kCols);
    gather_from_sequence_region(g, full.data(), local.data(), rl, kCols);
    std::vector<float> want_full;
    for (int q = 0; q < t; ++q) {
      const std::vector<float> lq = input(q, 5, rl * kCols);
      want_full.insert(want_full.end(), lq.begin(), lq.end());
    }
    expect_near_all(full, want_full, "sequence gather forward");
    // reduce_scatter_to_sequence: sum of every rank's full partial, keep
    // this rank's rows.
    std::vector<float> part = input(r, 6, kRows * kCols), mine(rl * kCols), want(rl * kCols, 0.0f);
    reduce_scatter_to_sequence_region(g, mine.data(), part.data(), rl, kCols);
    for (int q = 0; q < t; ++q) {
      const std::vector<float> pq = input(q, 6, kRows * kCols);
      for (int64_t i = 0; i < rl * kCols; ++i) want[i] += pq[r * rl * kCols + i];
    }
    expect_near_all(mine, want, "sequence reduce-scatter forward");
    // gather's backward is reduce-scatter: every rank's dY_r (full) flows back.
    std::vector<float> dY = input(r, 7, kRows * kCols), rsdY(rl * kCols);
    std::vector<float> dY_copy = dY;  // the mapping may use its input as scratch
    reduce_scatter_to_sequence_region(g, rsdY.data(), dY_copy.data(), rl, kCols);
    EXPECT_NEAR(group_sum(g, dot(dY, full)), group_sum(g, dot(rsdY, local)), 1e-4)
        << "sequence gather backward";
    // reduce-scatter's backward is gather.
    std::vector<float> dy = input(r, 8, rl * kCols), gdy(kRows * kCols);
    gather_from_sequence_region(g, gdy.data(), dy.data(), rl, kCols);
    EXPECT_NEAR(group_sum(g, dot(dy, mine)), group_sum(g, dot(gdy, part)), 1e-4)
        << "sequence reduce-scatter backward";
  });
}

// enter/leave: the region a block's attention or MLP runs in, entered from
// the residual stream (N rows, or N/tp under sp) and left back into it.
TEST_P(Mappings, EnterAndLeaveTheRegionWithAndWithoutSequenceParallel) {
  const int t = GetParam();
  for (bool sp : {false, true}) {
    on_tp_groups(t, sp, [&](const TpGroup& g) {
      const std::string what = sp ? "sp" : "tp";
      const int64_t N = kRows, C = kCols, rows = sp ? N / t : N, r = g.rank();
      // The stream: replicated under plain tp, row blocks under sp.
      auto stream_of = [&](int q, int salt) { return input(sp ? q : 0, salt, rows * C); };
      std::vector<float> stream = stream_of(r, 9), full(N * C);
      enter_tp_region(g, full.data(), stream.data(), N, C);
      std::vector<float> want;
      for (int q = 0; q < (sp ? t : 1); ++q) {
        const std::vector<float> s = stream_of(q, 9);
        want.insert(want.end(), s.begin(), s.end());
      }
      expect_near_all(full, want, what + " enter forward");
      // enter's backward sums every rank's dfull into the stream's gradient.
      std::vector<float> dfull = input(r, 10, N * C), dstream(rows * C, 0.0f);
      std::vector<float> dfull_copy = dfull;  // overwritten as the reduction buffer
      enter_tp_region_backward(g, dstream.data(), dfull_copy.data(), N, C);
      const double lhs = group_sum(g, dot(dfull, full));
      const double rhs = sp ? group_sum(g, dot(dstream, stream)) : dot(dstream, stream);
      EXPECT_NEAR(lhs, rhs, 1e-4) << what << " enter backward";
      // leave: the sum of every rank's partial, as stream rows.
      std::vector<float> partial = input(r, 11, N * C), out(rows * C);
      std::vector<float> partial_copy = partial;
      leave_tp_region(g, out.data(), partial_copy.data(), N, C);
      std::vector<float> want_out(rows * C, 0.0f);
      const int64_t row0 = sp ? r * rows : 0;
      for (int q = 0; q < t; ++q) {
        const std::vector<float> pq = input(q, 11, N * C);
        for (int64_t i = 0; i < rows * C; ++i) want_out[i] += pq[row0 * C + i];
      }
      expect_near_all(out, want_out, what + " leave forward");
      std::vector<float> dout = stream_of(r, 12), dpartial(N * C);
      leave_tp_region_backward(g, dpartial.data(), dout.data(), N, C);
      const double l2 = sp ? group_sum(g, dot(dout, out)) : dot(dout, out);
      EXPECT_NEAR(l2, group_sum(g, dot(dpartial, partial)), 1e-4) << what << " leave backward";
    });
  }
}

INSTANTIATE_TEST_SUITE_P(Tp, Mappings, ::testing::Values(2, 4),
                         [](const auto& info) { return "tp" + std::to_string(info.param); });

}  // namespace
}  // namespace parallm::tp_test
