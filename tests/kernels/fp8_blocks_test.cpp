// Blockwise FP8 (kernels/cpu/fp8_blocks.h): DeepSeek-V3's 1 x 128 tiles and
// 128 x 128 blocks and MX's 1 x 32 power-of-two blocks quantise within half
// an FP8 step of each value (the block's largest at exactly +-448), and the
// block GEMM equals the same codes and scales multiplied in double within
// f32 summation's bound: (k_block + K blocks + 2) * 2^-24 * sum |a b|
// (docs/testing.md, "FP8 block GEMM").
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "common/test_util.h"
#include "kernels/cpu/fp8_blocks.h"

namespace parallm::cpu {
namespace {

std::vector<float> random_matrix(int64_t rows, int64_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::uniform_real_distribution<float> mag(-6.0f, 6.0f);
  std::vector<float> x(static_cast<size_t>(rows * cols));
  // Values over twelve binades, so blocks hold subnormal codes too.
  for (float& v : x) v = nd(rng) * std::exp2(mag(rng));
  return x;
}

TEST(Fp8Blocks, QuantiseWithinHalfAStep) {
  for (auto [br, bc] : {std::pair<int64_t, int64_t>{1, 128}, {128, 128}, {1, 32}}) {
    const int64_t R = 130, C = 300;
    const std::vector<float> x = random_matrix(R, C, 3);
    const Fp8Blocks q = fp8_quantize_blocks(x.data(), R, C, C, br, bc, Fp8Format::E4M3);
    std::vector<float> back(x.size());
    fp8_dequantize_blocks(q, back.data());
    for (int64_t r = 0; r < R; ++r)
      for (int64_t c = 0; c < C; ++c) {
        const float v = x[r * C + c], s = q.scale(r, c);
        // Half an E4M3 step: 2^-4 relative among normals, 2^-10 s among subnormals;
        // the division by s and the product by s add an f32 rounding each.
        const double tol = std::max(std::fabs(v) * 0x1p-4, s * 0x1p-10) + std::fabs(v) * 0x1p-22;
        ASSERT_LE(std::fabs(back[r * C + c] - v), tol) << r << "," << c << " block " << br << "x" << bc;
      }
    // The largest value of each block lands on +-448 exactly.
    const int64_t gr = (R + br - 1) / br, gc = (C + bc - 1) / bc;
    for (int64_t i = 0; i < gr; ++i)
      for (int64_t j = 0; j < gc; ++j) {
        float amax = 0.0f;
        int64_t at = 0;
        for (int64_t r = i * br; r < std::min(R, (i + 1) * br); ++r)
          for (int64_t c = j * bc; c < std::min(C, (j + 1) * bc); ++c)
            if (std::fabs(x[r * C + c]) > amax) amax = std::fabs(x[r * C + c]), at = r * C + c;
        EXPECT_EQ(q.codes[static_cast<size_t>(at)] & 0x7F, 0x7E) << i << "," << j;
      }
  }
}

TEST(Fp8Blocks, PowerOfTwoScalesAsMx) {
  const int64_t R = 4, C = 96;
  const std::vector<float> x = random_matrix(R, C, 5);
  const Fp8Blocks q = fp8_quantize_blocks(x.data(), R, C, C, 1, 32, Fp8Format::E4M3, true);
  for (int64_t r = 0; r < R; ++r)
    for (int64_t j = 0; j < 3; ++j) {
      float amax = 0.0f;
      for (int64_t c = j * 32; c < (j + 1) * 32; ++c) amax = std::max(amax, std::fabs(x[r * C + c]));
      const float s = q.scale(r, j * 32);
      int e = 0;
      EXPECT_EQ(std::frexp(s, &e), 0.5f) << "a power of two";
      // amax / s in [2^8, 2^9): E4M3's top binade; above 448 it saturates.
      EXPECT_GE(amax / s, 256.0f);
      EXPECT_LT(amax / s, 512.0f);
    }
  // An all-zero block: scale 1, codes 0.
  std::vector<float> z(64, 0.0f);
  const Fp8Blocks qz = fp8_quantize_blocks(z.data(), 1, 64, 64, 1, 32, Fp8Format::E5M2, true);
  EXPECT_EQ(qz.scales, (std::vector<float>{1.0f, 1.0f}));
  for (uint8_t c : qz.codes) EXPECT_EQ(c, 0);
  // A block of f32 subnormals (amax / 448 would be 0): scale 1, zero codes, no NaN.
  for (bool pow2 : {false, true}) {
    const std::vector<float> sub = {1e-44f, 0.0f, -3e-45f, 0.0f};
    const Fp8Blocks qs = fp8_quantize_blocks(sub.data(), 1, 4, 4, 1, 4, Fp8Format::E4M3, pow2);
    EXPECT_EQ(qs.scales, (std::vector<float>{1.0f}));
    std::vector<float> back(4);
    fp8_dequantize_blocks(qs, back.data());
    for (float v : back) EXPECT_EQ(v, 0.0f);
  }
}

TEST(Fp8Blocks, GemmEqualsTheBlocksInDouble) {
  const int64_t M = 7, N = 130, K = 300, kb = 128;
  const std::vector<float> a = random_matrix(M, K, 7), b = random_matrix(N, K, 9);
  for (Fp8Format bf : {Fp8Format::E4M3, Fp8Format::E5M2}) {
    const Fp8Blocks A = fp8_quantize_blocks(a.data(), M, K, K, 1, kb, Fp8Format::E4M3);
    const Fp8Blocks B = fp8_quantize_blocks(b.data(), N, K, K, kb, kb, bf);
    std::vector<float> C(static_cast<size_t>(M * N));
    fp8_block_gemm_nt(A, B, C.data());
    const double u = 0x1p-24, gamma = (kb + (K + kb - 1) / kb + 2) * u;
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        double ref = 0.0, mag = 0.0;
        for (int64_t k = 0; k < K; ++k) {
          const double t = static_cast<double>(fp8_to_f32(A.codes[m * K + k], A.format)) *
                           A.scale(m, k) * fp8_to_f32(B.codes[n * K + k], B.format) * B.scale(n, k);
          ref += t;
          mag += std::fabs(t);
        }
        ASSERT_NEAR(C[m * N + n], ref, gamma * mag) << m << "," << n;
      }
  }
  const Fp8Blocks A = fp8_quantize_blocks(a.data(), M, K, K, 1, 128, Fp8Format::E4M3);
  const Fp8Blocks B = fp8_quantize_blocks(b.data(), N, K, K, 32, 32, Fp8Format::E4M3);
  std::vector<float> C(static_cast<size_t>(M * N));
  EXPECT_EQ(testing::error_of([&] { fp8_block_gemm_nt(A, B, C.data()); }),
            "fp8 block GEMM: A has K 300 in blocks of 128, B K 300 in blocks of 32");
}

}  // namespace
}  // namespace parallm::cpu
