// Column- and row-parallel linears (parallel/tensor/parallel_linear.h) at tp
// 2 and 4, with and without sequence parallelism, against the unsharded
// linear that every rank also builds: parameters are drawn by global index,
// so a shard is exactly a slice of the one-process tensor, and the forward
// output, the input gradient and the weight and bias gradients must be the
// matching slices (or sums) of the one-process ones.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "nn/layer_context.h"
#include "parallel/tensor/mappings.h"
#include "parallel/tensor/parallel_linear.h"
#include "tp_env.h"

namespace parallm::tp_test {
namespace {

constexpr int64_t kN = 8, kIn = 12, kOut = 16;  // divisible by tp 2 and 4
constexpr uint64_t kSeed = 77;

std::vector<float> data(int salt, int64_t n) {
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = std::cos(0.29f * i + 0.53f * salt);
  return v;
}

// One linear of either kind in its own ParameterSet, allocated and drawn.
template <class Linear>
struct Built {
  ParameterSet ps;
  Linear lin;
  Built(Allocator& alloc, const TpGroup& tp, int64_t in, int64_t out) {
    lin = Linear(ps, "l", in, out, /*bias=*/true, 0.02, tp);
    ps.allocate(alloc);
    ps.init_random(kSeed);
    // Biases start at zero; give them values so the forward sees them.
    for (int i = 0; i < ps.size(); ++i)
      if (ps.spec(i).shape.size() == 1)
        for (int64_t j = 0; j < ps.numel(i); ++j)
          ps.value({i})[j] = 0.1f * static_cast<float>(ps.spec(i).shard_begin + j + 1);
  }
  LayerContext context(Allocator& alloc, const std::vector<int64_t>& pos) const {
    return LayerContext{.alloc = alloc, .params = ps, .B = 1, .T = kN, .positions = pos.data()};
  }
  const float* grad(const char* name) const { return ps.grad({ps.find(name)}); }
};

void expect_slice(const float* got, const std::vector<float>& full, int64_t rows, int64_t cols,
                  int64_t full_cols, int64_t col0, int64_t row0, const std::string& what) {
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      EXPECT_NEAR(got[i * cols + j], full[(row0 + i) * full_cols + col0 + j], 1e-5)
          << what << " (" << i << ", " << j << ")";
}

class ParallelLinear : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    if (env().world->size() < GetParam()) GTEST_SKIP() << "needs " << GetParam() << " ranks";
  }
  template <class Body>
  void on_groups(bool sp, Body body) {
    comm::Communicator* world = env().world;
    const int t = GetParam(), r = world->rank();
    const bool in = r < world->size() / t * t;
    std::unique_ptr<comm::Communicator> tp = world->split(in ? r / t : -1, r, "tp");
    if (in) body(TpGroup{.comm = tp.get(), .sequence_parallel = sp});
  }
};

TEST_P(ParallelLinear, ColumnParallelIsASliceOfTheOneProcessLinear) {
  on_groups(false, [&](const TpGroup& tp) {
    Allocator alloc;
    std::vector<int64_t> pos(kN, 0);
    Built<ColumnParallelLinear> one(alloc, {}, kIn, kOut), par(alloc, tp, kIn, kOut);
    const int64_t ol = kOut / tp.size(), c0 = tp.rank() * ol;
    const std::vector<float> x = data(1, kN * kIn), dy = data(2, kN * kOut);
    std::vector<float> y(kN * kOut), yl(kN * ol), dx(kN * kIn, 0.0f), dxl(kN * kIn, 0.0f);
    one.lin.forward(one.context(alloc, pos), y.data(), x.data());
    par.lin.forward(par.context(alloc, pos), yl.data(), x.data());
    expect_slice(yl.data(), y, kN, ol, kOut, c0, 0, "column forward");
    std::vector<float> dyl(kN * ol);  // this rank's columns of dy
    for (int64_t i = 0; i < kN; ++i)
      for (int64_t j = 0; j < ol; ++j) dyl[i * ol + j] = dy[i * kOut + c0 + j];
    one.lin.backward(one.context(alloc, pos), dx.data(), dy.data(), x.data());
    par.lin.backward(par.context(alloc, pos), dxl.data(), dyl.data(), x.data());
    copy_to_tp_region_backward(tp, dxl.data(), kN * kIn);  // dinp is a partial sum
    expect_slice(dxl.data(), dx, kN, kIn, kIn, 0, 0, "column dinp");
    const std::vector<float> dw(one.grad("l.weight"), one.grad("l.weight") + kOut * kIn);
    expect_slice(par.grad("l.weight"), dw, ol, kIn, kIn, 0, c0, "column dW");
    const std::vector<float> db(one.grad("l.bias"), one.grad("l.bias") + kOut);
    expect_slice(par.grad("l.bias"), db, 1, ol, kOut, c0, 0, "column db");
  });
}

TEST_P(ParallelLinear, RowParallelSumsSlicesOfTheOneProcessLinear) {
  for (bool sp : {false, true}) {
    on_groups(sp, [&](const TpGroup& tp) {
      const std::string what = sp ? "row (sp)" : "row";
      Allocator alloc;
      std::vector<int64_t> pos(kN, 0);
      Built<RowParallelLinear> one(alloc, {}, kIn, kOut), par(alloc, tp, kIn, kOut);
      const int64_t il = kIn / tp.size(), c0 = tp.rank() * il;
      const int64_t rows = sp ? kN / tp.size() : kN, r0 = sp ? tp.rank() * rows : 0;
      const std::vector<float> x = data(3, kN * kIn), dy = data(4, kN * kOut);
      std::vector<float> xl(kN * il);  // this rank's input columns
      for (int64_t i = 0; i < kN; ++i)
        for (int64_t j = 0; j < il; ++j) xl[i * il + j] = x[i * kIn + c0 + j];
      std::vector<float> y(kN * kOut), yl(rows * kOut), dx(kN * kIn, 0.0f), dxl(kN * il, 0.0f);
      one.lin.forward(one.context(alloc, pos), y.data(), x.data());
      par.lin.forward(par.context(alloc, pos), yl.data(), xl.data());
      expect_slice(yl.data(), y, rows, kOut, kOut, 0, r0, what + " forward");
      one.lin.backward(one.context(alloc, pos), dx.data(), dy.data(), x.data());
      par.lin.backward(par.context(alloc, pos), dxl.data(), dy.data() + r0 * kOut, xl.data());
      expect_slice(dxl.data(), dx, kN, il, kIn, c0, 0, what + " dinp");
      const std::vector<float> dw(one.grad("l.weight"), one.grad("l.weight") + kOut * kIn);
      expect_slice(par.grad("l.weight"), dw, kOut, il, kIn, c0, 0, what + " dW");
      // The replicated bias saw this rank's rows only under sp: sum over tp.
      std::vector<float> db(par.grad("l.bias"), par.grad("l.bias") + kOut);
      if (sp) reduce_from_tp_region(tp, db.data(), kOut);
      const std::vector<float> db1(one.grad("l.bias"), one.grad("l.bias") + kOut);
      expect_slice(db.data(), db1, 1, kOut, kOut, 0, 0, what + " db");
    });
  }
}

INSTANTIATE_TEST_SUITE_P(Tp, ParallelLinear, ::testing::Values(2, 4),
                         [](const auto& info) { return "tp" + std::to_string(info.param); });

}  // namespace
}  // namespace parallm::tp_test
