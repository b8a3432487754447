// NF4 and double quantisation (kernels/cpu/nf4.h) against their definition:
// the codebooks, nearest-code rounding checked by distance, bnb's nibble
// order (first element high), short last blocks, zero blocks; the NF4
// weight's stored bytes as the allocator measures them (<= 4.2 bits per
// weight with double quantisation); and the tiled dequantising GEMM against
// dequantise-everything-then-GEMM, with its scratch bounded to one tile.
// (tests/reference/nf4_compare.py holds all of it to bitsandbytes itself.)
#include "kernels/cpu/nf4.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "base/error.h"
#include "base/rng.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/nf4_gemm.h"
#include "kernels/cpu/nf4_weight.h"

namespace parallm::cpu {
namespace {

std::vector<float> normal(int64_t n, const char* name, float scale = 1.0f) {
  std::vector<float> v(static_cast<size_t>(n));
  const uint64_t key = stream_key(17, name);
  for (int64_t i = 0; i < n; ++i)
    v[static_cast<size_t>(i)] = scale * static_cast<float>(normal_at(key, i));
  return v;
}

uint8_t nibble(const std::vector<uint8_t>& packed, int64_t i) {
  const uint8_t b = packed[static_cast<size_t>(i / 2)];
  return i % 2 == 0 ? b >> 4 : b & 0xF;
}

TEST(Nf4, CodebooksAreSortedAndSpanTheUnitInterval) {
  EXPECT_EQ(kNf4Code.front(), -1.0f);
  EXPECT_EQ(kNf4Code.back(), 1.0f);
  EXPECT_EQ(kNf4Code[7], 0.0f);
  for (size_t i = 1; i < kNf4Code.size(); ++i) EXPECT_LT(kNf4Code[i - 1], kNf4Code[i]);
  const auto& d = dynamic_map_signed();
  EXPECT_EQ(d.front(), -0.992968738f);
  EXPECT_EQ(d.back(), 1.0f);
  for (size_t i = 1; i < d.size(); ++i) EXPECT_LT(d[i - 1], d[i]) << i;
}

// bnb's create_dynamic_map(signed, 7 exponent bits, 8 bits) in double: for
// exponent i, 2^i + 1 boundaries linearly in [0.1, 1], their means times
// 10^(i - 6), both signs; then 0 and 1. The table must agree within one f32
// rounding of each step (bnb computes in f32).
TEST(Nf4, DynamicMapFollowsItsFormula) {
  std::vector<double> want;
  for (int i = 0; i < 7; ++i) {
    const int k = (1 << i) + 1;
    for (int j = 0; j + 1 < k; ++j) {
      const double lo = 0.1 + 0.9 * j / (k - 1), hi = 0.1 + 0.9 * (j + 1) / (k - 1);
      const double v = std::pow(10.0, i - 6) * (lo + hi) / 2.0;
      want.push_back(v);
      want.push_back(-v);
    }
  }
  want.push_back(0.0);
  want.push_back(1.0);
  std::sort(want.begin(), want.end());
  ASSERT_EQ(want.size(), 256u);
  const auto& d = dynamic_map_signed();
  for (size_t i = 0; i < 256; ++i)
    EXPECT_NEAR(d[i], want[i], 4e-7 * std::fabs(want[i])) << "entry " << i;
}

// Each index is a nearest code of x / absmax (ties may go either way only
// when exactly halfway), the first element sits in the high nibble, and the
// short last block keeps its own absmax.
TEST(Nf4, QuantiseRoundsToTheNearestCodeInBnbNibbleOrder) {
  const int64_t n = 64 * 5 + 37;  // odd: a short last block and a padded nibble
  std::vector<float> x = normal(n, "nf4.q");
  x[70] = 9.0f;  // an outlier owns block 1's scale
  std::vector<uint8_t> packed(static_cast<size_t>(nf4_ceil_div(n, 2)));
  std::vector<float> absmax(static_cast<size_t>(nf4_ceil_div(n, 64)));
  nf4_quantize(x.data(), n, 64, packed.data(), absmax.data());
  ASSERT_EQ(absmax.size(), 6u);
  for (int64_t b = 0; b < 6; ++b) {
    float m = 0;
    for (int64_t i = b * 64; i < std::min(n, b * 64 + 64); ++i) m = std::max(m, std::fabs(x[i]));
    EXPECT_EQ(absmax[b], m) << "block " << b;
  }
  EXPECT_EQ(absmax[1], 9.0f);
  EXPECT_EQ(nibble(packed, 70), 15);
  for (int64_t i = 0; i < n; ++i) {
    const float s = x[i] * (1.0f / absmax[i / 64]);
    const float got = std::fabs(kNf4Code[nibble(packed, i)] - s);
    for (float c : kNf4Code) EXPECT_LE(got, std::fabs(c - s) + 1e-7f) << "element " << i;
  }
  EXPECT_EQ(packed.back() & 0xF, 7) << "the padding nibble is code 7 (0.0)";

  // Nibble order on a hand-made block: 1, -1, 0, then 0.08 (code 8).
  std::vector<float> h(64, 0.0f);
  h[0] = 1.0f, h[1] = -1.0f, h[3] = 0.08f;
  std::vector<uint8_t> hp(32);
  float ha = 0;
  nf4_quantize(h.data(), 64, 64, hp.data(), &ha);
  EXPECT_EQ(ha, 1.0f);
  EXPECT_EQ(hp[0], 0xF0);
  EXPECT_EQ(hp[1], 0x78);
  EXPECT_EQ(hp[2], 0x77);
}

TEST(Nf4, ZeroBlockAndRoundTripError) {
  const int64_t n = 256;
  std::vector<float> x = normal(n, "nf4.rt", 0.02f);
  for (int64_t i = 64; i < 128; ++i) x[i] = 0.0f;
  std::vector<uint8_t> packed(n / 2);
  std::vector<float> absmax(4), y(n);
  nf4_quantize(x.data(), n, 64, packed.data(), absmax.data());
  nf4_dequantize(packed.data(), absmax.data(), 64, 0, n, y.data());
  EXPECT_EQ(absmax[1], 0.0f);
  for (int64_t i = 64; i < 128; ++i) EXPECT_EQ(y[i], 0.0f);
  // The widest gap between neighbouring codes is 1 - 0.7230: half of it bounds the error.
  for (int64_t i = 0; i < n; ++i) EXPECT_LE(std::fabs(y[i] - x[i]), 0.139f * absmax[i / 64]) << i;
  // The block maximum is stored exactly (code +-1).
  for (int b : {0, 2, 3}) {
    float best = 0;
    for (int64_t i = b * 64; i < b * 64 + 64; ++i) best = std::max(best, std::fabs(y[i]));
    EXPECT_EQ(best, absmax[b]);
  }
  // A range that starts and ends inside blocks matches the whole.
  std::vector<float> part(100);
  nf4_dequantize(packed.data(), absmax.data(), 64, 33, 133, part.data());
  for (int64_t i = 0; i < 100; ++i) EXPECT_EQ(part[i], y[33 + i]);
}

TEST(Nf4, DoubleQuantisedAbsmaxIsCloseAndNearest) {
  const int64_t n = 700;  // three blocks of 256, the last short
  std::vector<float> absmax = normal(n, "nf4.dq", 0.01f);
  for (float& a : absmax) a = 0.05f + std::fabs(a);
  std::vector<uint8_t> q(n);
  std::vector<float> a2(3), back(n);
  const float offset = double_quantize_absmax(absmax.data(), n, q.data(), a2.data());
  double mean = 0;
  for (float a : absmax) mean += a;
  EXPECT_NEAR(offset, mean / n, 1e-7);
  double_dequantize_absmax(q.data(), a2.data(), offset, n, back.data());
  const auto& code = dynamic_map_signed();
  for (int64_t i = 0; i < n; ++i) {
    const float s = (absmax[i] - offset) * (1.0f / a2[i / 256]);
    const float got = std::fabs(code[q[i]] - s);
    for (float c : code) ASSERT_LE(got, std::fabs(c - s) + 1e-9f) << "element " << i;
    // Dynamic 8-bit keeps ~2 significant digits of each centred value.
    EXPECT_NEAR(back[i], absmax[i], 0.01f * a2[i / 256] + 1e-6f) << i;
  }
}

// The allocator measures the stored bytes: 4.5 bits per weight with fp32
// absmax, 4 + 8/64 + 32/(64*256) = 4.127 with double quantisation; the
// Workspace used for the absmax while quantising is released.
TEST(Nf4Weight, AllocatorMeasuresBitsPerWeight) {
  const int64_t rows = 512, cols = 1024, n = rows * cols;
  const std::vector<float> w = normal(n, "nf4.w", 0.02f);
  for (bool dq : {false, true}) {
    Allocator a;
    Nf4Weight nw(a, w.data(), rows, cols, dq);
    const int64_t bytes = a.current(MemTag::Parameter);
    EXPECT_EQ(bytes, nw.stored_bytes());
    EXPECT_EQ(bytes, nf4_storage_bytes(n, 64, dq));
    EXPECT_EQ(a.current(MemTag::Workspace), 0);
    const double bits = 8.0 * static_cast<double>(bytes) / static_cast<double>(n);
    if (dq) {
      EXPECT_LE(bits, 4.2);
      EXPECT_NEAR(bits, 4.0 + 8.0 / 64 + 32.0 / (64 * 256), 1e-9);
    } else {
      EXPECT_DOUBLE_EQ(bits, 4.5);
    }
    // dequantize_rows agrees with the free functions on the same storage.
    std::vector<float> full(n), rows37(3 * cols);
    if (dq) {
      std::vector<float> am(static_cast<size_t>(n / 64));
      double_dequantize_absmax(nw.qabsmax().data<uint8_t>(), nw.absmax2().data<float>(),
                               nw.offset(), n / 64, am.data());
      nf4_dequantize(nw.packed().data<uint8_t>(), am.data(), 64, 0, n, full.data());
    } else {
      nf4_dequantize(nw.packed().data<uint8_t>(), nw.absmax().data<float>(), 64, 0, n, full.data());
    }
    nw.dequantize_rows(37, 40, rows37.data());
    for (int64_t i = 0; i < 3 * cols; ++i) ASSERT_EQ(rows37[i], full[37 * cols + i]);
    for (int64_t i = 0; i < n; ++i) ASSERT_NEAR(full[i], w[i], 0.15f * 0.1f) << i;
  }
}

// y = x W^T through tiles against dequantising all of W and one GEMM; skinny
// (M <= 8) and oneDNN row counts, N not a multiple of the tile; dx += dy W.
TEST(Nf4Gemm, TiledMatchesDequantiseThenGemm) {
  const int64_t N = 300, K = 2048;  // tile = 32 rows: 10 tiles, the last short
  ASSERT_EQ(nf4_tile_rows(K), 32);
  const std::vector<float> w = normal(N * K, "nf4.gw", 0.02f);
  Allocator a;
  Nf4Weight nw(a, w.data(), N, K, true);
  std::vector<float> wd(N * K), bias = normal(N, "nf4.bias");
  nw.dequantize(0, N * K, wd.data());
  for (int64_t M : {1, 5, 37}) {
    const std::vector<float> x = normal(M * K, "nf4.x"), dy = normal(M * N, "nf4.dy");
    std::vector<float> y(M * N), want(M * N);
    a.reset_peaks();
    nf4_linear_forward(a, y.data(), x.data(), nw, bias.data(), M);
    EXPECT_EQ(a.peak(MemTag::Workspace), 32 * K * 4) << "one tile of scratch, never all of W";
    linear_forward<float>(want.data(), x.data(), wd.data(), bias.data(), M, K, N);
    for (int64_t i = 0; i < M * N; ++i) {
      double scale = std::fabs(bias[i % N]);
      for (int64_t k = 0; k < K; ++k) scale += std::fabs(x[i / N * K + k] * wd[i % N * K + k]);
      ASSERT_NEAR(y[i], want[i], 1e-6 * scale) << "M " << M << " element " << i;
    }
    std::vector<float> dx(M * K, 0.5f), dx_want(M * K, 0.5f);
    nf4_linear_backward_input(a, dx.data(), dy.data(), nw, M);
    linear_backward<float>(dx_want.data(), nullptr, nullptr, dy.data(), x.data(), wd.data(), M, K,
                           N);
    for (int64_t i = 0; i < M * K; ++i) {
      double scale = 0.5;
      for (int64_t n = 0; n < N; ++n) scale += std::fabs(dy[i / K * N + n] * wd[n * K + i % K]);
      ASSERT_NEAR(dx[i], dx_want[i], 1e-6 * scale) << "M " << M << " element " << i;
    }
  }
}

}  // namespace
}  // namespace parallm::cpu

namespace parallm::cpu {
namespace {

// A tp shard cut from the full tensor's quantisation (rows of a column-
// parallel weight, columns of a row-parallel one) dequantises to exactly the
// full tensor's values, double quantisation's second-level blocks included;
// a cut through a block is refused.
TEST(Nf4Weight, SlicesDequantiseToTheFullTensorsValues) {
  const int64_t R = 96, C = 384;  // 576 blocks: three second-level blocks, the last short
  const std::vector<float> w = [&] {
    std::vector<float> v(R * C);
    const uint64_t key = stream_key(3, "slice");
    for (int64_t i = 0; i < R * C; ++i) v[i] = static_cast<float>(normal_at(key, i));
    return v;
  }();
  for (bool dq : {false, true}) {
    Allocator a;
    const Nf4Weight full(a, w.data(), R, C, dq);
    std::vector<float> whole(R * C);
    full.dequantize(0, R * C, whole.data());
    struct Cut {
      int64_t row0, rows, col0, cols;
    };
    for (const Cut& k : {Cut{0, 48, 0, C}, Cut{48, 48, 0, C}, Cut{0, R, 0, 192},
                         Cut{0, R, 192, 192}, Cut{0, R, 128, 64}, Cut{32, 32, 0, C}}) {
      ASSERT_TRUE(Nf4Weight::slice_aligned(full, k.row0, k.rows, k.col0, k.cols));
      const Nf4Weight s = Nf4Weight::slice(a, full, k.row0, k.rows, k.col0, k.cols);
      std::vector<float> got(k.rows * k.cols);
      s.dequantize(0, k.rows * k.cols, got.data());
      for (int64_t r = 0; r < k.rows; ++r)
        for (int64_t c = 0; c < k.cols; ++c)
          ASSERT_EQ(got[r * k.cols + c], whole[(k.row0 + r) * C + k.col0 + c])
              << dq << " " << k.row0 << " " << k.col0 << " (" << r << ", " << c << ")";
    }
    // Requantising a shard on its own gives other values under double
    // quantisation (its own offset and absmax2): why shards are cut instead.
    if (dq) {
      std::vector<float> cols(R * 192);
      for (int64_t r = 0; r < R; ++r)
        std::copy_n(w.data() + r * C + 192, 192, cols.data() + r * 192);
      const Nf4Weight own(a, cols.data(), R, 192, true);
      std::vector<float> mine(R * 192);
      own.dequantize(0, R * 192, mine.data());
      int64_t differ = 0;
      for (int64_t r = 0; r < R; ++r)
        for (int64_t c = 0; c < 192; ++c) differ += mine[r * 192 + c] != whole[r * C + 192 + c];
      EXPECT_GT(differ, 0);
    }
    EXPECT_FALSE(Nf4Weight::slice_aligned(full, 0, R, 32, 192));  // a block cut in two
    EXPECT_FALSE(Nf4Weight::slice_aligned(full, 0, R, 0, 96));
    EXPECT_THROW(Nf4Weight::slice(a, full, 0, R, 0, 96), Error);
    const Nf4Weight odd(a, w.data(), 5, 12, dq);  // 60 values: rows cut mid-block
    EXPECT_FALSE(Nf4Weight::slice_aligned(odd, 1, 4, 0, 12));
  }
}

}  // namespace
}  // namespace parallm::cpu
