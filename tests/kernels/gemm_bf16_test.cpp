// The 16-bit GEMM (kernels/cpu/gemm_bf16.h) against a double-precision
// reference computed from the same 16-bit-rounded inputs, for every
// transpose used by the layers (NT forward, NN dinp, TN dW), beta 0 and 1,
// on the native oneDNN path (when the CPU has AVX512-BF16) and the emulated
// one; and the roundings themselves (nearest even, f16 overflow to Inf).
#include "kernels/cpu/gemm_bf16.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "base/rng.h"
#include "tensor/half.h"

namespace parallm {
namespace {

using cpu::LowpType;

float widen(uint16_t h, LowpType t) { return t == LowpType::BF16 ? bf16_to_f32(h) : f16_to_f32(h); }

// C = op(A) op(B) + beta C with A, B random, rounded to 16 bits; checked
// element-wise against f64 with the error bound of f32 summation:
// |C - ref| <= 2 K eps32 sum_k |a_ik b_kj| (+ beta |C0|).
void check_gemm(const cpu::LowpGemm& g, bool ta, bool tb, int64_t M, int64_t N, int64_t K,
                float beta) {
  Allocator alloc;
  const LowpType t = g.type();
  const int64_t lda = ta ? M : K, ldb = tb ? K : N, ldc = N;
  std::vector<float> af(M * K), bf(K * N), c(M * N), c0(M * N);
  const uint64_t key = stream_key(11, "gemm_bf16");
  for (size_t i = 0; i < af.size(); ++i) af[i] = 2.0f * uniform_at(key, i, 0) - 1.0f;
  for (size_t i = 0; i < bf.size(); ++i) bf[i] = 2.0f * uniform_at(key, i, 1) - 1.0f;
  for (size_t i = 0; i < c.size(); ++i) c0[i] = c[i] = uniform_at(key, i, 2);
  std::vector<uint16_t> a(af.size()), b(bf.size());
  cpu::round_to_lowp(a.data(), af.data(), static_cast<int64_t>(af.size()), t);
  cpu::round_to_lowp(b.data(), bf.data(), static_cast<int64_t>(bf.size()), t);
  g.gemm(ta, tb, M, N, K, a.data(), lda, b.data(), ldb, beta, c.data(), ldc, alloc);
  const double eps32 = std::numeric_limits<float>::epsilon();
  int bad = 0;
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double ref = beta * double(c0[i * ldc + j]), mag = std::abs(ref);
      for (int64_t k = 0; k < K; ++k) {
        const double x = widen(a[ta ? k * lda + i : i * lda + k], t);
        const double y = widen(b[tb ? j * ldb + k : k * ldb + j], t);
        ref += x * y;
        mag += std::abs(x * y);
      }
      const double err = std::abs(double(c[i * ldc + j]) - ref);
      if (err > 2.0 * double(K + 1) * eps32 * mag + 1e-30 && bad++ < 5)
        ADD_FAILURE() << g.backend() << " ta " << ta << " tb " << tb << " beta " << beta << " ("
                      << i << ", " << j << "): " << c[i * ldc + j] << " vs " << ref;
    }
  EXPECT_EQ(bad, 0);
}

void check_all(const cpu::LowpGemm& g) {
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (float beta : {0.0f, 1.0f}) check_gemm(g, ta, tb, 37, 29, 67, beta);
  check_gemm(g, false, true, 128, 96, 200, 0.0f);  // the shapes of a linear layer
  check_gemm(g, true, false, 96, 200, 128, 1.0f);
}

TEST(GemmBf16, NativeMatchesF64OfRoundedInputs) {
  cpu::LowpGemm g(LowpType::BF16, true);
  if (!cpu::cpu_has_avx512_bf16()) GTEST_SKIP() << "no AVX512-BF16: " << g.backend();
  EXPECT_TRUE(g.native());
  check_all(g);
  EXPECT_NE(g.backend().find("oneDNN"), std::string::npos) << g.backend();
}

TEST(GemmBf16, EmulatedMatchesF64OfRoundedInputs) {
  cpu::LowpGemm g(LowpType::BF16, false);
  EXPECT_FALSE(g.native());
  check_all(g);
}

TEST(GemmBf16, Fp16IsEmulatedAndExact) {
  cpu::LowpGemm g(LowpType::F16, true);
  EXPECT_FALSE(g.native());  // no AVX512-FP16 GEMM is used on any CPU
  check_all(g);
}

TEST(GemmBf16, RoundingIsNearestEvenAndF16Overflows) {
  const float in[] = {1.0f,
                      1.0f + 1.0f / 256,
                      1.0f + 3.0f / 256,
                      65504.0f,
                      65519.0f,
                      65520.0f,
                      -1e6f,
                      std::numeric_limits<float>::quiet_NaN()};
  uint16_t h[8];
  float back[8];
  cpu::round_to_lowp(h, in, 8, LowpType::BF16);
  cpu::widen_lowp(back, h, 8, LowpType::BF16);
  EXPECT_EQ(back[1], 1.0f);               // tie -> even (bf16 keeps 7 fraction bits)
  EXPECT_EQ(back[2], 1.0f + 4.0f / 256);  // tie -> even, upwards
  EXPECT_EQ(back[6], -999424.0f);         // bf16 has f32's range
  EXPECT_TRUE(std::isnan(back[7]));
  cpu::round_to_lowp(h, in, 8, LowpType::F16);
  cpu::widen_lowp(back, h, 8, LowpType::F16);
  EXPECT_EQ(back[1], 1.0f + 1.0f / 256);  // f16 keeps 10 fraction bits
  EXPECT_EQ(back[3], 65504.0f);           // the largest f16
  EXPECT_EQ(back[4], 65504.0f);
  EXPECT_TRUE(std::isinf(back[5]) && back[5] > 0);  // rounds past the largest: Inf
  EXPECT_TRUE(std::isinf(back[6]) && back[6] < 0);
  EXPECT_TRUE(std::isnan(back[7]));
  std::vector<float> x(in, in + 8);
  cpu::round_inplace(x.data(), 8, LowpType::F16);
  for (int i = 0; i < 7; ++i) EXPECT_EQ(x[i], back[i]);
}

// The vectorised f16 conversions (F16C where built with it) give the same
// bits as tensor/half.h's scalar ones, subnormals and overflow included.
TEST(GemmBf16, VectorF16ConversionMatchesScalar) {
  const int64_t n = 1 << 17;
  std::vector<float> x(n);
  const uint64_t key = stream_key(5, "f16_bits");
  for (int64_t i = 0; i < n; ++i) {
    // Magnitudes from 2^-30 to 2^20: f16 subnormals, normals and overflow.
    const double e = -30.0 + 50.0 * uniform_at(key, i, 0);
    x[i] = static_cast<float>((uniform_at(key, i, 1) < 0.5 ? -1 : 1) * std::exp2(e));
  }
  std::vector<uint16_t> h(n);
  std::vector<float> w(n);
  cpu::round_to_lowp(h.data(), x.data(), n, LowpType::F16);
  cpu::widen_lowp(w.data(), h.data(), n, LowpType::F16);
  int bad = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (h[i] != f32_to_f16(x[i]) && bad++ < 5) ADD_FAILURE() << "round " << x[i];
    if (w[i] != f16_to_f32(h[i]) && bad++ < 5) ADD_FAILURE() << "widen " << h[i];
  }
  EXPECT_EQ(bad, 0);
}

// The vectorised bf16 conversions equal the scalar ones bit for bit, for
// random bit patterns (NaNs, infinities, subnormals, ties included).
TEST(GemmBf16, VectorBf16ConversionMatchesScalar) {
  const int64_t n = (1 << 17) + 7;  // a tail past the last full vector
  std::vector<float> x(n);
  const uint64_t key = stream_key(6, "bf16_bits");
  for (int64_t i = 0; i < n; ++i) {
    auto u = static_cast<uint32_t>(uniform_at(key, i, 0) * 4294967296.0);
    if (i % 7 == 0) u = (u & 0xffff0000u) | 0x8000u;  // exact ties
    if (i % 11 == 0) u &= 0x807fffffu;                // subnormals
    std::memcpy(&x[i], &u, 4);
  }
  std::vector<uint16_t> h(n);
  std::vector<float> w(n);
  cpu::round_to_lowp(h.data(), x.data(), n, LowpType::BF16);
  cpu::widen_lowp(w.data(), h.data(), n, LowpType::BF16);
  int bad = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (h[i] != f32_to_bf16(x[i]) && bad++ < 5) ADD_FAILURE() << "round at " << i;
    const float ref = bf16_to_f32(h[i]);
    if (std::memcmp(&w[i], &ref, 4) != 0 && bad++ < 5) ADD_FAILURE() << "widen at " << i;
  }
  EXPECT_EQ(bad, 0);
}

}  // namespace
}  // namespace parallm
