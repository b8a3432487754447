// gemm and linear-layer tests: against a naive triple loop, finite
// differences of L = sum(out * R) for the backward, accumulate (+=) semantics,
// and thread-count independence of the bias gradient.
#include "kernels/cpu/matmul.h"

#include <gtest/gtest.h>

#include "finite_diff.h"

namespace parallm::cpu {
namespace {

using test::randn;

constexpr int64_t N = 7, IC = 13, OC = 5;

// out (N, OC) = inp (N, IC) * W^T + b, the obvious way.
std::vector<double> naive_linear(const std::vector<double>& inp, const std::vector<double>& w,
                                 const double* b) {
  std::vector<double> out(N * OC);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < OC; ++o) {
      double s = b != nullptr ? b[o] : 0.0;
      for (int64_t i = 0; i < IC; ++i) s += inp[n * IC + i] * w[o * IC + i];
      out[n * OC + o] = s;
    }
  return out;
}

TEST(Gemm, AllTransposesMatchNaive) {
  const int64_t M = 5, Nn = 7, K = 3;
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      auto a = randn(M * K, 1, "a"), b = randn(K * Nn, 1, "b"), c = randn(M * Nn, 1, "c");
      std::vector<double> want(c);
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < Nn; ++j) {
          double s = 0;
          for (int64_t k = 0; k < K; ++k)
            s += (ta ? a[k * M + i] : a[i * K + k]) * (tb ? b[j * K + k] : b[k * Nn + j]);
          want[i * Nn + j] = 2.0 * s + 0.5 * c[i * Nn + j];
        }
      gemm<double>(ta, tb, M, Nn, K, 2.0, a.data(), ta ? M : K, b.data(), tb ? K : Nn, 0.5,
                   c.data(), Nn);
      for (size_t i = 0; i < c.size(); ++i) EXPECT_NEAR(c[i], want[i], 1e-12) << ta << tb << i;
    }
}

TEST(Linear, ForwardMatchesNaiveWithAndWithoutBias) {
  auto inp = randn(N * IC, 2, "inp"), w = randn(OC * IC, 2, "w"), b = randn(OC, 2, "b");
  for (const double* bias : {static_cast<const double*>(b.data()), (const double*)nullptr}) {
    auto want = naive_linear(inp, w, bias);
    std::vector<double> out(N * OC, 99.0);  // forward overwrites
    linear_forward(out.data(), inp.data(), w.data(), bias, N, IC, OC);
    for (size_t i = 0; i < out.size(); ++i) EXPECT_NEAR(out[i], want[i], 1e-12) << i;

    auto fi = test::cast_vec<float>(inp), fw = test::cast_vec<float>(w),
         fb = test::cast_vec<float>(b);
    std::vector<float> fout(N * OC);
    linear_forward(fout.data(), fi.data(), fw.data(), bias != nullptr ? fb.data() : nullptr, N, IC,
                   OC);
    test::expect_all_near(fout, want, 1e-5, "float linear");
  }
}

TEST(Linear, BackwardMatchesFiniteDifferences) {
  auto inp = randn(N * IC, 3, "inp"), w = randn(OC * IC, 3, "w"), b = randn(OC, 3, "b");
  auto r = randn(N * OC, 3, "r");
  std::vector<double> out(N * OC);
  auto loss = [&] {
    linear_forward(out.data(), inp.data(), w.data(), b.data(), N, IC, OC);
    return test::dot(out, r);
  };
  std::vector<double> dinp(N * IC, 0.0), dw(OC * IC, 0.0), db(OC, 0.0);
  linear_backward(dinp.data(), dw.data(), db.data(), r.data(), inp.data(), w.data(), N, IC, OC);
  test::expect_grad_matches(loss, inp, dinp, "dinp");
  test::expect_grad_matches(loss, w, dw, "dweight");
  test::expect_grad_matches(loss, b, db, "dbias");
}

TEST(Linear, BackwardAccumulatesAndSkipsNulls) {
  auto inp = randn(N * IC, 4, "inp"), w = randn(OC * IC, 4, "w"), dout = randn(N * OC, 4, "d");
  std::vector<double> dinp(N * IC, 0.0), dw(OC * IC, 0.0), db(OC, 0.0);
  linear_backward(dinp.data(), dw.data(), db.data(), dout.data(), inp.data(), w.data(), N, IC, OC);
  std::vector<double> dinp2(N * IC, 1.0), dw2(OC * IC, 2.0), db2(OC, 3.0);
  linear_backward(dinp2.data(), dw2.data(), db2.data(), dout.data(), inp.data(), w.data(), N, IC,
                  OC);
  for (size_t i = 0; i < dinp.size(); ++i) EXPECT_NEAR(dinp2[i], dinp[i] + 1.0, 1e-12);
  for (size_t i = 0; i < dw.size(); ++i) EXPECT_NEAR(dw2[i], dw[i] + 2.0, 1e-12);
  for (size_t i = 0; i < db.size(); ++i) EXPECT_NEAR(db2[i], db[i] + 3.0, 1e-12);

  std::vector<double> only_db(OC, 0.0);
  linear_backward<double>(nullptr, nullptr, only_db.data(), dout.data(), inp.data(), w.data(), N,
                          IC, OC);
  for (size_t i = 0; i < db.size(); ++i) EXPECT_EQ(only_db[i], db[i]);
}

TEST(Linear, BiasGradientIndependentOfThreadCount) {
  const int64_t n = 301, oc = 200;  // large enough to take the parallel path
  auto dout = test::randn<float>(n * oc, 5, "d");
  std::vector<float> a(oc, 0.0f), b(oc, 0.0f);
  test::with_threads(1, [&] {
    linear_backward<float>(nullptr, nullptr, a.data(), dout.data(), nullptr, nullptr, n, 1, oc);
  });
  test::with_threads(3, [&] {
    linear_backward<float>(nullptr, nullptr, b.data(), dout.data(), nullptr, nullptr, n, 1, oc);
  });
  EXPECT_EQ(a, b);
}

}  // namespace
}  // namespace parallm::cpu
