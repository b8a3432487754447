// The skinny GEMM (kernels/cpu/skinny_gemm.h) against a double-precision
// reference, f32 and 16-bit weights, every row count it serves, K around
// its vector widths, padded leading dimensions, alpha and beta (beta 0 must
// ignore NaN in C); and its invariants: a row's bits do not depend on the
// other rows nor on the thread count; cpu::gemm routes NT with few rows to it;
// a fused call over several weights gives each the bits of its own call;
// and the summation order the kernel documents, bit for bit.
#include "kernels/cpu/skinny_gemm.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "base/rng.h"
#include "kernels/cpu/matmul.h"
#include "tensor/half.h"

namespace parallm::cpu {
namespace {

std::vector<float> uniform(int64_t n, uint64_t seed, const char* name) {
  std::vector<float> v(static_cast<size_t>(n));
  const uint64_t key = stream_key(seed, name);
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = 2.0f * uniform_at(key, i) - 1.0f;
  return v;
}

enum class WKind { F32, BF16, F16 };

struct Case {
  int64_t M, N, K;
  float alpha, beta;
};

// Runs the kernel on random data with leading dimensions padded by 3 and
// checks each element: |C - ref| <= 2 K eps32 (|alpha| sum |a w|) + 1e-6 |beta C0|.
void check(WKind kind, const Case& c) {
  const int64_t lda = c.K + 3, ldw = c.K + 3, ldc = c.N + 3;
  std::vector<float> a = uniform(c.M * lda, 1, "a"), wf = uniform(c.N * ldw, 2, "w");
  std::vector<float> c0 = uniform(c.M * ldc, 3, "c");
  std::vector<uint16_t> wh(wf.size());
  if (kind != WKind::F32) {
    const LowpType t = kind == WKind::BF16 ? LowpType::BF16 : LowpType::F16;
    round_to_lowp(wh.data(), wf.data(), static_cast<int64_t>(wf.size()), t);
    widen_lowp(wf.data(), wh.data(), static_cast<int64_t>(wf.size()), t);  // the values used
  }
  std::vector<float> out(c0);
  if (c.beta == 0.0f)  // must not be read
    for (float& x : out) x = std::numeric_limits<float>::quiet_NaN();
  if (kind == WKind::F32)
    skinny_gemm_nt(c.M, c.N, c.K, c.alpha, a.data(), lda, wf.data(), ldw, c.beta, out.data(), ldc);
  else
    skinny_gemm_nt_lowp(c.M, c.N, c.K, c.alpha, a.data(), lda, wh.data(),
                        kind == WKind::BF16 ? LowpType::BF16 : LowpType::F16, ldw, c.beta,
                        out.data(), ldc);
  const double eps = std::numeric_limits<float>::epsilon();
  int bad = 0;
  for (int64_t m = 0; m < c.M; ++m)
    for (int64_t n = 0; n < c.N; ++n) {
      double dot = 0, mag = 0;
      for (int64_t k = 0; k < c.K; ++k) {
        const double p = double(a[m * lda + k]) * wf[n * ldw + k];
        dot += p;
        mag += std::abs(p);
      }
      const double c_in = c.beta == 0.0f ? 0.0 : double(c0[m * ldc + n]);
      const double ref = c.alpha * dot + c.beta * c_in;
      const double tol =
          2.0 * (c.K + 2) * eps * (std::abs(c.alpha) * mag + std::abs(c.beta * c_in));
      const double got = out[m * ldc + n];
      if (!(std::abs(got - ref) <= tol) && ++bad <= 5)
        ADD_FAILURE() << "M " << c.M << " N " << c.N << " K " << c.K << " at (" << m << ", " << n
                      << "): " << got << " vs " << ref << " (tol " << tol << ")";
    }
  // The padding of C beyond N is never written.
  for (int64_t m = 0; m < c.M; ++m)
    for (int64_t j = c.N; j < ldc; ++j) {
      const float x = out[m * ldc + j];
      if (c.beta == 0.0f)
        EXPECT_TRUE(std::isnan(x));
      else
        EXPECT_EQ(x, c0[m * ldc + j]);
    }
}

TEST(SkinnyGemm, MatchesDoubleReference) {
  for (WKind kind : {WKind::F32, WKind::BF16, WKind::F16})
    for (int64_t M = 1; M <= kSkinnyMaxRows; ++M)
      for (int64_t N : {1, 3, 4, 5, 17, 35})
        for (int64_t K : {0, 1, 7, 8, 15, 16, 17, 24, 33, 200})
          for (auto [alpha, beta] : {std::pair{1.0f, 0.0f}, {1.0f, 1.0f}, {0.5f, -2.0f}})
            check(kind, {M, N, K, alpha, beta});
}

TEST(SkinnyGemm, LargeShapeThreadedMatchesReference) {
  check(WKind::F32, {1, 2304, 768, 1.0f, 0.0f});
  check(WKind::BF16, {3, 1000, 768, 1.0f, 1.0f});
}

// Bits of C for rows of A given separately (each alone) and together.
TEST(SkinnyGemm, RowBitsIndependentOfBatchAndThreads) {
  const int64_t N = 3001, K = 777, M = kSkinnyMaxRows;
  const std::vector<float> a = uniform(M * K, 4, "a"), w = uniform(N * K, 5, "w");
  std::vector<uint16_t> wh(w.size());
  round_to_lowp(wh.data(), w.data(), static_cast<int64_t>(w.size()), LowpType::BF16);
  const int saved = omp_get_max_threads();
  for (bool lowp : {false, true}) {
    auto run = [&](int64_t rows, const float* x, int threads) {
      omp_set_num_threads(threads);
      std::vector<float> c(static_cast<size_t>(rows * N));
      if (lowp)
        skinny_gemm_nt_lowp(rows, N, K, 1.0f, x, K, wh.data(), LowpType::BF16, K, 0.0f, c.data(),
                            N);
      else
        skinny_gemm_nt(rows, N, K, 1.0f, x, K, w.data(), K, 0.0f, c.data(), N);
      return c;
    };
    const std::vector<float> all = run(M, a.data(), 2);
    EXPECT_EQ(run(M, a.data(), 1), all) << "thread count changed the bits, lowp " << lowp;
    for (int64_t m = 0; m < M; ++m) {
      const std::vector<float> one = run(1, a.data() + m * K, 2);
      EXPECT_EQ(0, std::memcmp(one.data(), all.data() + m * N, N * sizeof(float)))
          << "row " << m << " differs alone and in a batch, lowp " << lowp;
    }
  }
  omp_set_num_threads(saved);
}

// q, k, v (and gate, up) as one pass: every part's C has the bits of its own
// skinny call (alpha 1, beta 0), f32 and bf16, one row and several, 1 and 2
// threads, with one part small enough to be a single task.
TEST(SkinnyGemm, PartsMatchSeparateCallsBitForBit) {
  const int64_t K = 301;
  const int64_t Ns[] = {700, 13, 257};
  const std::vector<float> a = uniform(kSkinnyMaxRows * K, 8, "a");
  std::vector<std::vector<float>> w;
  std::vector<std::vector<uint16_t>> wh;
  for (int64_t N : Ns) {
    w.push_back(uniform(N * K, 9 + static_cast<uint64_t>(w.size()), "w"));
    wh.emplace_back(w.back().size());
    round_to_lowp(wh.back().data(), w.back().data(), N * K, LowpType::BF16);
  }
  const int saved = omp_get_max_threads();
  for (bool lowp : {false, true})
    for (int64_t M : {int64_t{1}, int64_t{5}})
      for (int threads : {1, 2}) {
        omp_set_num_threads(threads);
        std::vector<std::vector<float>> fused, alone;
        std::vector<SkinnyPart> parts;
        for (size_t i = 0; i < w.size(); ++i) {
          const int64_t N = Ns[i];
          fused.emplace_back(static_cast<size_t>(M * N), std::numeric_limits<float>::quiet_NaN());
          alone.emplace_back(static_cast<size_t>(M * N));
          const void* wp = lowp ? static_cast<const void*>(wh[i].data()) : w[i].data();
          parts.push_back({wp, N, K, fused.back().data(), N});
          if (lowp)
            skinny_gemm_nt_lowp(M, N, K, 1.0f, a.data(), K, wh[i].data(), LowpType::BF16, K, 0.0f,
                                alone.back().data(), N);
          else
            skinny_gemm_nt(M, N, K, 1.0f, a.data(), K, w[i].data(), K, 0.0f, alone.back().data(),
                           N);
        }
        if (lowp)
          skinny_gemm_nt_parts_lowp(M, K, a.data(), K, parts.data(),
                                    static_cast<int64_t>(parts.size()), LowpType::BF16);
        else
          skinny_gemm_nt_parts(M, K, a.data(), K, parts.data(), static_cast<int64_t>(parts.size()));
        for (size_t i = 0; i < w.size(); ++i)
          EXPECT_EQ(0, std::memcmp(fused[i].data(), alone[i].data(), fused[i].size() * 4))
              << "part " << i << " lowp " << lowp << " M " << M << " threads " << threads;
      }
  omp_set_num_threads(saved);
}

// The order skinny_gemm.cpp documents, in scalars: K's even 8-blocks and its
// odd ones summed lane by lane with fused multiply-adds, the two added lane
// by lane, then across lanes as (j, j + 4), (j, j + 2), (0, 1). The layout
// tests of ep and cp depend on it (their layouts send a few rows through
// this kernel where one process uses oneDNN), so a change of order should
// fail here first. K is a multiple of 8: the tail's products may or may not
// be fused by the compiler.
float documented_order(const float* w, const float* a, int64_t K) {
  float even[8] = {}, odd[8] = {};
  for (int64_t k = 0; k < K; k += 8) {
    float* lanes = (k / 8) % 2 == 0 ? even : odd;
    for (int j = 0; j < 8; ++j) lanes[j] = std::fma(w[k + j], a[k + j], lanes[j]);
  }
  float v[8];
  for (int j = 0; j < 8; ++j) v[j] = even[j] + odd[j];
  for (int j = 0; j < 4; ++j) v[j] += v[j + 4];
  for (int j = 0; j < 2; ++j) v[j] += v[j + 2];
  return v[0] + v[1];
}

TEST(SkinnyGemm, SumsInTheDocumentedOrder) {
#if !(defined(__AVX2__) && defined(__FMA__) && defined(__F16C__))
  GTEST_SKIP() << "the portable loop leaves fusing its products to the compiler";
#endif
  const int64_t N = 37;  // 9 tiles of 4 streams and a leftover row, at 1 thread
  const int saved = omp_get_max_threads();
  for (int64_t K : {8, 24, 256, 776})  // 776: three 256-stretches and one 8-block
    for (int64_t M : {1, 3, 8})
      for (bool lowp : {false, true})
        for (int threads : {1, 2}) {
          omp_set_num_threads(threads);
          const std::vector<float> a = uniform(M * K, 11, "a");
          std::vector<float> w = uniform(N * K, 12, "w");
          std::vector<uint16_t> wh(w.size());
          round_to_lowp(wh.data(), w.data(), N * K, LowpType::BF16);
          if (lowp) widen_lowp(w.data(), wh.data(), N * K, LowpType::BF16);  // the values used
          std::vector<float> c(static_cast<size_t>(M * N));
          if (lowp)
            skinny_gemm_nt_lowp(M, N, K, 1.0f, a.data(), K, wh.data(), LowpType::BF16, K, 0.0f,
                                c.data(), N);
          else
            skinny_gemm_nt(M, N, K, 1.0f, a.data(), K, w.data(), K, 0.0f, c.data(), N);
          int bad = 0;
          for (int64_t m = 0; m < M; ++m)
            for (int64_t n = 0; n < N; ++n) {
              const float want = documented_order(w.data() + n * K, a.data() + m * K, K);
              if (c[m * N + n] != want && ++bad <= 3)
                ADD_FAILURE() << "K " << K << " M " << M << " lowp " << lowp << " threads "
                              << threads << " at (" << m << ", " << n << "): " << c[m * N + n]
                              << " vs " << want;
            }
        }
  omp_set_num_threads(saved);
}

TEST(SkinnyGemm, GemmRoutesFewRowsNtHere) {
  const int64_t N = 70, K = 50;
  const std::vector<float> a = uniform(2 * K, 6, "a"), w = uniform(N * K, 7, "w");
  std::vector<float> want(2 * N), got(2 * N);
  skinny_gemm_nt(2, N, K, 1.0f, a.data(), K, w.data(), K, 0.0f, want.data(), N);
  gemm<float>(false, true, 2, N, K, 1.0f, a.data(), K, w.data(), K, 0.0f, got.data(), N);
  EXPECT_EQ(got, want);
  EXPECT_TRUE(skinny_fits(false, true, kSkinnyMaxRows));
  EXPECT_FALSE(skinny_fits(false, true, kSkinnyMaxRows + 1));
  EXPECT_FALSE(skinny_fits(false, false, 1));
  EXPECT_FALSE(skinny_fits(true, true, 1));
}

}  // namespace
}  // namespace parallm::cpu
