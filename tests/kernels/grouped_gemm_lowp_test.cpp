// The 16-bit grouped linears (kernels/cpu/grouped_gemm.h, mixed precision)
// against the fp32 grouped kernel: on the same 16-bit-rounded inputs
// (widened exactly) the results agree to f32 summation error, so the only
// difference is the rounding of the inputs; on the unrounded inputs they
// agree within bf16/fp16 tolerance and differ (the 16-bit path is in
// effect). Forward, input, weight and bias gradients, an empty group, bf16
// native (where the CPU has AVX512-BF16) and emulated, fp16.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "base/rng.h"
#include "common/test_util.h"
#include "kernels/cpu/grouped_gemm.h"

namespace parallm {
namespace {

using cpu::LowpType;

struct Data {
  static constexpr int64_t kIC = 24, kOC = 40, kGroups = 4;
  std::vector<int64_t> offsets{0, 5, 5, 22, 23};  // group 1 empty
  int64_t M = 23;
  std::vector<float> x, w, b, dout;
  Data() {
    const uint64_t key = stream_key(3, "grouped_lowp");
    auto fill = [&](std::vector<float>& v, int64_t n, int stream, float scale) {
      v.resize(n);
      for (int64_t i = 0; i < n; ++i) v[i] = scale * (2.0f * uniform_at(key, i, stream) - 1.0f);
    };
    fill(x, M * kIC, 0, 1.0f);
    fill(w, kGroups * kOC * kIC, 1, 0.3f);
    fill(b, kGroups * kOC, 2, 0.1f);
    fill(dout, M * kOC, 3, 1.0f);
  }
};

struct Outputs {
  std::vector<float> out, dinp, dw, db;
};

std::vector<uint16_t> round16(const std::vector<float>& v, LowpType t) {
  std::vector<uint16_t> r(v.size());
  cpu::round_to_lowp(r.data(), v.data(), static_cast<int64_t>(v.size()), t);
  return r;
}
std::vector<float> widened(const std::vector<float>& v, LowpType t) {
  std::vector<float> r(v.size());
  cpu::widen_lowp(r.data(), round16(v, t).data(), static_cast<int64_t>(v.size()), t);
  return r;
}

Outputs run_f32(const Data& d, const std::vector<float>& x, const std::vector<float>& w,
                const std::vector<float>& dout) {
  const int64_t IC = Data::kIC, OC = Data::kOC, G = Data::kGroups;
  Outputs o{std::vector<float>(d.M * OC), std::vector<float>(d.M * IC, 0.5f),
            std::vector<float>(G * OC * IC, 0.25f), std::vector<float>(G * OC, 0.125f)};
  cpu::grouped_linear_forward(o.out.data(), x.data(), w.data(), d.b.data(), d.offsets.data(), G, IC,
                              OC);
  cpu::grouped_linear_backward(o.dinp.data(), o.dw.data(), nullptr, dout.data(), x.data(), w.data(),
                               d.offsets.data(), G, IC, OC);
  // The bias gradient sums the f32 gradient in both paths.
  cpu::grouped_linear_backward(nullptr, nullptr, o.db.data(), d.dout.data(), x.data(), w.data(),
                               d.offsets.data(), G, IC, OC);
  return o;
}

Outputs run_lowp(const Data& d, const cpu::LowpGemm& g) {
  const int64_t IC = Data::kIC, OC = Data::kOC, G = Data::kGroups;
  const LowpType t = g.type();
  Allocator alloc;
  const std::vector<uint16_t> x = round16(d.x, t), w = round16(d.w, t), dout = round16(d.dout, t);
  Outputs o{std::vector<float>(d.M * OC, 9.0f), std::vector<float>(d.M * IC, 0.5f),
            std::vector<float>(G * OC * IC, 0.25f), std::vector<float>(G * OC, 0.125f)};
  cpu::grouped_linear_forward_lowp(g, alloc, o.out.data(), x.data(), w.data(), d.b.data(),
                                   d.offsets.data(), G, IC, OC);
  cpu::grouped_linear_backward_lowp(g, alloc, o.dinp.data(), o.dw.data(), o.db.data(), dout.data(),
                                    d.dout.data(), x.data(), w.data(), d.offsets.data(), G, IC, OC);
  return o;
}

double rel(const std::vector<float>& got, const std::vector<float>& ref) {
  return testing::relative_l2(got, ref);
}

void check(const cpu::LowpGemm& g, double tol16) {
  const Data d;
  const LowpType t = g.type();
  const Outputs lo = run_lowp(d, g);
  const Outputs same = run_f32(d, widened(d.x, t), widened(d.w, t), widened(d.dout, t));
  const Outputs f32 = run_f32(d, d.x, d.w, d.dout);
  const std::string what = g.backend();
  const std::pair<const std::vector<float>*, const char*> parts[] = {
      {&lo.out, "out"}, {&lo.dinp, "dinp"}, {&lo.dw, "dweight"}};
  const std::vector<float>* same_of[] = {&same.out, &same.dinp, &same.dw};
  const std::vector<float>* f32_of[] = {&f32.out, &f32.dinp, &f32.dw};
  for (int i = 0; i < 3; ++i) {
    EXPECT_LE(rel(*parts[i].first, *same_of[i]), 1e-6) << what << " " << parts[i].second;
    const double r = rel(*parts[i].first, *f32_of[i]);
    EXPECT_LE(r, tol16) << what << " " << parts[i].second;
    EXPECT_GT(r, 0.0) << what << " " << parts[i].second << ": no 16-bit rounding";
  }
  EXPECT_EQ(lo.db, f32.db) << what << ": the bias gradient is the f32 row sum";
  // The empty group's weight and bias gradients are untouched.
  for (int64_t i = 0; i < Data::kOC * Data::kIC; ++i)
    ASSERT_EQ(lo.dw[Data::kOC * Data::kIC + i], 0.25f) << what;
}

TEST(GroupedGemmLowp, Bf16MatchesF32) {
  // bf16 keeps 8 significant bits: inputs move by up to 2^-9 relative.
  check(cpu::LowpGemm(LowpType::BF16), 1e-2);
  check(cpu::LowpGemm(LowpType::BF16, /*allow_native=*/false), 1e-2);
}

TEST(GroupedGemmLowp, Fp16MatchesF32) { check(cpu::LowpGemm(LowpType::F16), 2e-3); }

}  // namespace
}  // namespace parallm
