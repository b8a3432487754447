// The fp32 grouped linears (kernels/cpu/grouped_gemm.h) against a loop of
// per-group linear calls at the same thread count, bit for bit at 1 and 2
// threads, on row groups that take each of the kernel's paths: a group with
// enough rows for every thread (run alone on all threads), small groups
// side by side, a lone small group, and empty ones. (oneDNN's bits for a
// large shape can change with the thread count, docs/gemm.md; these small
// groups' do not.)
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "base/rng.h"
#include "finite_diff.h"
#include "kernels/cpu/grouped_gemm.h"
#include "kernels/cpu/matmul.h"

namespace parallm {
namespace {

constexpr int64_t kIC = 48, kOC = 40;

struct Case {
  std::vector<int64_t> offsets;
  std::vector<float> x, w, b, dout;
  explicit Case(const std::vector<int64_t>& sizes) : offsets{0} {
    for (int64_t s : sizes) offsets.push_back(offsets.back() + s);
    const uint64_t key = stream_key(9, "grouped_fp32");
    auto fill = [&](std::vector<float>& v, int64_t n, int stream) {
      v.resize(n);
      for (int64_t i = 0; i < n; ++i) v[i] = 2.0f * uniform_at(key, i, stream) - 1.0f;
    };
    const int64_t M = offsets.back(), G = groups();
    fill(x, M * kIC, 0), fill(w, G * kOC * kIC, 1), fill(b, G * kOC, 2), fill(dout, M * kOC, 3);
  }
  int64_t groups() const { return static_cast<int64_t>(offsets.size()) - 1; }
};

struct Outputs {
  std::vector<float> out, dinp, dw, db;
};

Outputs grouped(const Case& c) {
  const int64_t M = c.offsets.back(), G = c.groups();
  Outputs o{std::vector<float>(M * kOC), std::vector<float>(M * kIC, 0.25f),
            std::vector<float>(G * kOC * kIC, 0.5f), std::vector<float>(G * kOC, 0.f)};
  cpu::grouped_linear_forward(o.out.data(), c.x.data(), c.w.data(), c.b.data(), c.offsets.data(), G,
                              kIC, kOC);
  cpu::grouped_linear_backward(o.dinp.data(), o.dw.data(), o.db.data(), c.dout.data(), c.x.data(),
                               c.w.data(), c.offsets.data(), G, kIC, kOC);
  return o;
}

Outputs looped(const Case& c) {
  const int64_t M = c.offsets.back(), G = c.groups();
  Outputs o{std::vector<float>(M * kOC), std::vector<float>(M * kIC, 0.25f),
            std::vector<float>(G * kOC * kIC, 0.5f), std::vector<float>(G * kOC, 0.f)};
  for (int64_t g = 0; g < G; ++g) {
    const int64_t r0 = c.offsets[g], rows = c.offsets[g + 1] - r0;
    if (rows == 0) continue;
    cpu::linear_forward<float>(&o.out[r0 * kOC], &c.x[r0 * kIC], &c.w[g * kOC * kIC], &c.b[g * kOC],
                               rows, kIC, kOC);
    cpu::linear_backward<float>(&o.dinp[r0 * kIC], &o.dw[g * kOC * kIC], &o.db[g * kOC],
                                &c.dout[r0 * kOC], &c.x[r0 * kIC], &c.w[g * kOC * kIC], rows, kIC,
                                kOC);
  }
  return o;
}

void expect_same_bits(const std::vector<float>& got, const std::vector<float>& want,
                      const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0) << what;
}

TEST(GroupedGemm, EveryPathGivesThePerGroupLoopsBits) {
  // {300: alone on all threads; 10, 40, 5: side by side; 0: skipped} and
  // {600: alone; 20: the lone small group, called directly}
  for (const auto& sizes : {std::vector<int64_t>{300, 10, 0, 40, 5}, {600, 0, 20}}) {
    const Case c(sizes);
    for (int threads : {1, 2})
      test::with_threads(threads, [&] {
        SCOPED_TRACE(threads);
        const Outputs want = looped(c), got = grouped(c);
        expect_same_bits(got.out, want.out, "forward");
        expect_same_bits(got.dinp, want.dinp, "input gradient");
        expect_same_bits(got.dw, want.dw, "weight gradient");
        expect_same_bits(got.db, want.db, "bias gradient");
      });
  }
}

}  // namespace
}  // namespace parallm
