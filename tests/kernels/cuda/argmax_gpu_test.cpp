// argmax_rows on the GPU picks what std::max_element picks on the host: the
// first of equal maxima, at odd row lengths (one element, fewer than a warp,
// a vocabulary's 50257), with NaN skipped and a row of -inf naming index 0.
#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "common/gpu_test.h"
#include "kernels/cuda/argmax.h"

namespace parallm {
namespace {

using testing::DeviceBuffer;
using ArgmaxGpu = testing::GpuTest;

TEST_F(ArgmaxGpu, FirstMaximumOfEachRowAsOnTheHost) {
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0.f, 3.f);
  for (int64_t V : {1, 7, 255, 257, 50257}) {
    const int64_t N = 5;
    std::vector<float> x(static_cast<size_t>(N * V));
    for (auto& v : x) v = std::round(nd(rng) * 4.f) / 4.f;  // coarse values: many ties
    if (V > 200) {
      x[3] = 100.f;  // row 0: a tie between index 3 and 200 (threads 3 and 200 of one block)
      x[200] = 100.f;
      x[V + V - 1] = 100.f;                                    // row 1: the maximum last
      x[2 * V + 5] = std::numeric_limits<float>::quiet_NaN();  // row 2: NaN never wins
    }
    std::vector<int32_t> want(static_cast<size_t>(N));
    for (int64_t r = 0; r < N; ++r) {
      const float* row = x.data() + r * V;
      int32_t best = 0;
      for (int64_t i = 1; i < V; ++i)
        if (std::isnan(row[best]) || row[i] > row[best]) best = static_cast<int32_t>(i);
      want[static_cast<size_t>(r)] = best;
    }
    DeviceBuffer<float> dx(x);
    DeviceBuffer<int32_t> out(static_cast<size_t>(N));
    cuda::argmax_rows(out.get(), dx.get(), N, V, nullptr);
    EXPECT_EQ(out.to_host(), want) << "V " << V;
  }
}

TEST_F(ArgmaxGpu, RowOfMinusInfinityNamesItsFirstIndex) {
  std::vector<float> x(300, -std::numeric_limits<float>::infinity());
  DeviceBuffer<float> dx(x);
  DeviceBuffer<int32_t> out(1);
  cuda::argmax_rows(out.get(), dx.get(), 1, 300, nullptr);
  EXPECT_EQ(out.to_host()[0], 0);
}

}  // namespace
}  // namespace parallm
