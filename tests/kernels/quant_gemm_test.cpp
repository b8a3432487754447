// GGUF block formats and the quantised linear layer (kernels/cpu/quant_*):
// quantise -> dequantise stays within each format's step; every dot-product
// path this machine can run (scalar, AVX2, AVX512-VNNI) against a double
// sum of the same integer codes and scales; slices keep the full tensor's
// values; a row's result is the same in a batch. (Bit-equality with the gguf
// package's own dequantisation: tests/io/gguf/gguf_reference.py blocks.)
#include "kernels/cpu/quant_gemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "base/rng.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/quant_dot.h"
#include "kernels/cpu/quant_packed.h"

namespace parallm::cpu {
namespace {

std::vector<float> normal(int64_t n, const char* name, float scale = 1.0f) {
  std::vector<float> v(static_cast<size_t>(n));
  const uint64_t key = stream_key(23, name);
  for (int64_t i = 0; i < n; ++i)
    v[static_cast<size_t>(i)] = scale * static_cast<float>(normal_at(key, i));
  return v;
}

constexpr QuantType kTypes[] = {QuantType::Q8_0, QuantType::Q4_0, QuantType::Q4_K,
                                QuantType::Q6_K};

// The largest error a value may take: half a step of its block's grid (the
// step: Q8_0 amax/127; Q4_0 amax/8, a full step on the side the clip at 15
// cuts; Q4_K (max - min)/15 <= 2 amax/15; Q6_K amax/31), plus the rounding
// of the scales: the fp16 scale is off by at most 2^-11 of itself, times the
// largest code (127, 8, 15, 32); a K-quant's 6- or 8-bit sub-block scale is
// a multiple of d = (largest scale)/63 (/127), off by at most d/2 (and its
// min by dmin/2), times the largest code.
double max_error(QuantType t, double amax) {
  const double h = std::ldexp(1.0, -11);
  switch (t) {
    case QuantType::Q8_0: return amax / 127 * (0.5 + 127 * h) * (1 + 1e-6);
    case QuantType::Q4_0: return amax / 8 * (1.0 + 8 * h) * (1 + 1e-6);
    case QuantType::Q4_K: {
      const double step = 2 * amax / 15, d = step / 63;
      return (step * 0.5 + (d / 2 + step * h) * 15 + (amax / 63 / 2 + amax * h)) * (1 + 1e-6);
    }
    case QuantType::Q6_K: {
      const double step = amax / 31, d = step / 127;
      return (step * 0.5 + (d / 2 + step * h) * 32) * (1 + 1e-6);
    }
  }
  return 0;
}

TEST(QuantBlocks, RoundTripStaysWithinTheStep) {
  const int64_t n = 4096;
  const std::vector<float> x = normal(n, "roundtrip");
  for (QuantType t : kTypes) {
    std::vector<uint8_t> q(static_cast<size_t>(quant_row_bytes(t, n)));
    std::vector<float> y(static_cast<size_t>(n));
    quantize_blocks(t, x.data(), n, q.data());
    dequantize_blocks(t, q.data(), n, y.data());
    const int64_t be = quant_traits(t).block_elems;
    for (int64_t b = 0; b < n / be; ++b) {
      double amax = 0;
      for (int64_t i = 0; i < be; ++i) amax = std::max(amax, std::fabs(double(x[b * be + i])));
      for (int64_t i = 0; i < be; ++i)
        ASSERT_LE(std::fabs(double(y[b * be + i]) - x[b * be + i]), max_error(t, amax))
            << quant_traits(t).name << " block " << b << " value " << i;
    }
  }
}

TEST(QuantBlocks, SizesAreGgufs) {
  EXPECT_EQ(quant_row_bytes(QuantType::Q8_0, 64), 68);
  EXPECT_EQ(quant_row_bytes(QuantType::Q4_0, 64), 36);
  EXPECT_EQ(quant_row_bytes(QuantType::Q4_K, 256), 144);
  EXPECT_EQ(quant_row_bytes(QuantType::Q6_K, 256), 210);
  EXPECT_DOUBLE_EQ(quant_bits_per_value(QuantType::Q6_K), 6.5625);
  EXPECT_EQ(quant_traits(QuantType::Q4_K).ggml_type, 12);
  EXPECT_FALSE(quant_type_from_ggml(13).has_value());  // Q5_K: not supported
  EXPECT_THROW(quant_row_bytes(QuantType::Q4_K, 100), Error);
  EXPECT_THROW(quant_type_from_name("iq2_xxs"), Error);
}

// Every path against the double sum of the same codes: the dequantised
// weight times the dequantised 8-bit activation. Each block's integer
// product is exact, so the paths differ from it only by f32 rounding of the
// scaled block terms and their sum: at most (blocks + 10) * 2^-23 of the sum
// of |terms| (one rounding per scale product, per block accumulation and
// per horizontal add of 8 lanes; docs/testing.md).
TEST(QuantDot, EveryPathMatchesTheDoubleSumOfItsCodes) {
  Allocator alloc;
  const int64_t N = 37, K = 768;
  struct Case {
    QuantLayout layout;
    QuantDotPath path;
  };
  const Case cases[] = {{QuantLayout::kRows, QuantDotPath::kScalar},
                        {QuantLayout::kRows, QuantDotPath::kAvx2},
                        {QuantLayout::kRows, QuantDotPath::kVnni},
                        {QuantLayout::kPackedAvx2, QuantDotPath::kAvx2},
                        {QuantLayout::kPackedVnni, QuantDotPath::kVnni}};
  for (QuantType t : kTypes) {
   for (const Case& c : cases) {
    if (c.layout != QuantLayout::kRows && !quant_packs(t)) continue;
    if (!quant_dot_path_available(c.path)) {
      std::printf("[ skipped ] %s: not on this machine\n", quant_dot_path_name(c.path));
      continue;
    }
    const QuantDotPath p = c.path;
    const std::vector<float> w = normal(N * K, "w", 0.05f);
    const QuantWeight qw = QuantWeight::quantize(alloc, t, w.data(), N, K, c.layout);
    std::vector<float> wd(static_cast<size_t>(N * K));
    qw.dequantize_rows(0, N, wd.data());
    for (int64_t M : {1, 2, 3, 8, 11}) {
      const std::vector<float> x = normal(M * K, "x");
      std::vector<int8_t> xq(static_cast<size_t>(M * K));
      std::vector<float> xd(static_cast<size_t>(M * K / 32)), xs(xd.size());
      std::vector<int32_t> xsum(xd.size());
      quantize_rows_q8(x.data(), M, K, xq.data(), xd.data(), xs.data(), xsum.data());
      {
        std::vector<float> out(static_cast<size_t>(M * N));
        quant_dot_rows(p, alloc, out.data(), x.data(), qw, M);
        for (int64_t m = 0; m < M; ++m)
          for (int64_t n = 0; n < N; ++n) {
            double ref = 0, mag = 0;
            for (int64_t k = 0; k < K; ++k) {
              const double xv = double(xq[m * K + k]) * xd[(m * K + k) / 32];
              ref += double(wd[n * K + k]) * xv;
              mag += std::fabs(double(wd[n * K + k]) * xv);
            }
            const double bound = double(K / 32 + 10) * std::ldexp(1.0, -23) * mag;
            ASSERT_NEAR(out[m * N + n], ref, bound)
                << quant_traits(t).name << " " << quant_dot_path_name(p) << " layout "
                << static_cast<int>(c.layout) << " M " << M << " (" << m << ", " << n << ")";
          }
      }
    }
   }
  }
}

// Activation quantisation: each value within half a step of its block's grid.
TEST(QuantDot, ActivationRowsQuantiseToHalfAStep) {
  const int64_t M = 2, K = 256;
  const std::vector<float> x = normal(M * K, "act");
  std::vector<int8_t> q(static_cast<size_t>(M * K));
  std::vector<float> d(static_cast<size_t>(M * K / 32)), s(d.size());
  std::vector<int32_t> sums(d.size());
  quantize_rows_q8(x.data(), M, K, q.data(), d.data(), s.data(), sums.data());
  for (int64_t i = 0; i < M * K; ++i)
    ASSERT_LE(std::fabs(q[i] * d[i / 32] - x[i]), d[i / 32] * 0.5f * (1 + 1e-6f)) << i;
  for (int64_t b = 0; b < M * K / 32; ++b) {
    int sum = 0;
    for (int i = 0; i < 32; ++i) sum += q[b * 32 + i];
    EXPECT_FLOAT_EQ(s[b], d[b] * float(sum));
    EXPECT_EQ(sums[b], sum);
  }
}

// A prompt's rows go through the decode kernel in chunks of 8: each row's
// result has the bits it has alone (M = 1), in every layout; the bias is added.
TEST(QuantGemm, ARowGetsTheSameBitsInABatchAsAlone) {
  Allocator alloc;
  const int64_t N = 70, K = 512, M = 21;
  for (QuantType t : kTypes) {
    for (QuantLayout l : {QuantLayout::kRows, QuantLayout::kAuto}) {
      const std::vector<float> w = normal(N * K, "wp", 0.05f), x = normal(M * K, "xp");
      const std::vector<float> bias = normal(N, "bias");
      const QuantWeight qw = QuantWeight::quantize(alloc, t, w.data(), N, K, l);
      std::vector<float> out(static_cast<size_t>(M * N)), one(static_cast<size_t>(N));
      quant_linear_forward(alloc, out.data(), x.data(), qw, bias.data(), M);
      for (int64_t m = 0; m < M; ++m) {
        quant_linear_forward(alloc, one.data(), x.data() + m * K, qw, bias.data(), 1);
        for (int64_t n = 0; n < N; ++n)
          ASSERT_EQ(out[m * N + n], one[n]) << quant_traits(t).name << " row " << m << " " << n;
      }
    }
  }
}

TEST(QuantWeight, SlicesKeepTheFullTensorsValues) {
  Allocator alloc;
  const int64_t N = 6, K = 512;
  const std::vector<float> w = normal(N * K, "ws");
  for (QuantType t : kTypes) {
    const QuantWeight full = QuantWeight::quantize(alloc, t, w.data(), N, K);
    const QuantWeight s = QuantWeight::slice(alloc, full, 2, 3, 256, 256);
    // Packing is a permutation of the file's bytes: unpacked rows are the blocks.
    const QuantWeight rows = QuantWeight::quantize(alloc, t, w.data(), N, K, QuantLayout::kRows);
    std::vector<uint8_t> blk(static_cast<size_t>(full.row_bytes()));
    for (int64_t r = 0; r < N; ++r) {
      full.copy_row_blocks(r, blk.data());
      ASSERT_EQ(std::memcmp(blk.data(), rows.row(r), blk.size()), 0) << quant_traits(t).name << r;
    }
    std::vector<float> a(static_cast<size_t>(N * K)), b(3 * 256);
    full.dequantize_rows(0, N, a.data());
    s.dequantize_rows(0, 3, b.data());
    for (int64_t r = 0; r < 3; ++r)
      for (int64_t c = 0; c < 256; ++c) ASSERT_EQ(b[r * 256 + c], a[(r + 2) * K + 256 + c]);
    if (quant_traits(t).block_elems == 256) {
      EXPECT_THROW(QuantWeight::slice(alloc, full, 0, 1, 32, 256), Error);
    }
    EXPECT_EQ(rows.stored_bytes(), N * quant_row_bytes(t, K));
  }
}

}  // namespace
}  // namespace parallm::cpu
