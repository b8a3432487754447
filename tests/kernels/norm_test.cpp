// LayerNorm and RMSNorm tests (and Gemma's (1 + w) RMSNorm): forward
// statistics, float against double,
// finite differences for every gradient, accumulate semantics, and
// thread-count independence of the weight/bias gradients.
#include "kernels/cpu/norm.h"

#include <gtest/gtest.h>

#include "finite_diff.h"

namespace parallm::cpu {
namespace {

using test::randn;

constexpr int64_t N = 7, C = 13;
constexpr double kEps = 1e-5;

TEST(LayerNorm, ForwardNormalisesAndFloatMatchesDouble) {
  // A large common offset stresses the variance computation.
  auto inp = randn(N * C, 1, "inp", 2.0, 30.0), w = randn(C, 1, "w"), b = randn(C, 1, "b");
  std::vector<double> ones(C, 1.0), zeros(C, 0.0), out(N * C), mean(N), rstd(N);
  layernorm_forward(out.data(), mean.data(), rstd.data(), inp.data(), ones.data(), zeros.data(), N,
                    C, 0.0);
  for (int64_t n = 0; n < N; ++n) {
    double s = 0, ss = 0;
    for (int64_t i = 0; i < C; ++i) s += out[n * C + i], ss += out[n * C + i] * out[n * C + i];
    EXPECT_NEAR(s / C, 0.0, 1e-12);
    EXPECT_NEAR(ss / C, 1.0, 1e-12);  // biased variance, like PyTorch
  }
  layernorm_forward(out.data(), mean.data(), rstd.data(), inp.data(), w.data(), b.data(), N, C,
                    kEps);
  auto fi = test::cast_vec<float>(inp), fw = test::cast_vec<float>(w),
       fb = test::cast_vec<float>(b);
  std::vector<float> fout(N * C), fmean(N), frstd(N);
  layernorm_forward(fout.data(), fmean.data(), frstd.data(), fi.data(), fw.data(), fb.data(), N, C,
                    kEps);
  test::expect_all_near(fout, out, 1e-5, "float layernorm out");
  test::expect_all_near(fmean, mean, 1e-6, "float mean");
  test::expect_all_near(frstd, rstd, 1e-5, "float rstd");
}

TEST(LayerNorm, BackwardMatchesFiniteDifferences) {
  auto inp = randn(N * C, 2, "inp"), w = randn(C, 2, "w"), b = randn(C, 2, "b");
  auto r = randn(N * C, 2, "r");
  std::vector<double> out(N * C), mean(N), rstd(N);
  auto loss = [&] {
    layernorm_forward(out.data(), mean.data(), rstd.data(), inp.data(), w.data(), b.data(), N, C,
                      kEps);
    return test::dot(out, r);
  };
  loss();
  std::vector<double> dinp(N * C, 0.0), dw(C, 0.0), db(C, 0.0);
  layernorm_backward(dinp.data(), dw.data(), db.data(), r.data(), inp.data(), w.data(), mean.data(),
                     rstd.data(), N, C);
  test::expect_grad_matches(loss, inp, dinp, "dinp");
  test::expect_grad_matches(loss, w, dw, "dweight");
  test::expect_grad_matches(loss, b, db, "dbias");
}

TEST(LayerNorm, BackwardAccumulates) {
  auto inp = randn(N * C, 3, "inp"), w = randn(C, 3, "w"), b = randn(C, 3, "b");
  auto d = randn(N * C, 3, "d");
  std::vector<double> out(N * C), mean(N), rstd(N);
  layernorm_forward(out.data(), mean.data(), rstd.data(), inp.data(), w.data(), b.data(), N, C,
                    kEps);
  std::vector<double> dinp(N * C, 0.0), dw(C, 0.0), db(C, 0.0);
  layernorm_backward(dinp.data(), dw.data(), db.data(), d.data(), inp.data(), w.data(), mean.data(),
                     rstd.data(), N, C);
  std::vector<double> dinp2(N * C, 1.0), dw2(C, 1.0), db2(C, 1.0);
  layernorm_backward(dinp2.data(), dw2.data(), db2.data(), d.data(), inp.data(), w.data(),
                     mean.data(), rstd.data(), N, C);
  for (size_t i = 0; i < dinp.size(); ++i) EXPECT_NEAR(dinp2[i], dinp[i] + 1.0, 1e-12);
  for (int64_t i = 0; i < C; ++i) {
    EXPECT_NEAR(dw2[i], dw[i] + 1.0, 1e-12);
    EXPECT_NEAR(db2[i], db[i] + 1.0, 1e-12);
  }
}

TEST(RMSNorm, ForwardMatchesDefinitionAndFloat) {
  auto inp = randn(N * C, 4, "inp"), w = randn(C, 4, "w");
  std::vector<double> out(N * C), rstd(N);
  rmsnorm_forward(out.data(), rstd.data(), inp.data(), w.data(), N, C, kEps);
  for (int64_t n = 0; n < N; ++n) {
    double ss = 0;
    for (int64_t i = 0; i < C; ++i) ss += inp[n * C + i] * inp[n * C + i];
    const double r = 1.0 / std::sqrt(ss / C + kEps);
    EXPECT_NEAR(rstd[n], r, 1e-14);
    for (int64_t i = 0; i < C; ++i) EXPECT_NEAR(out[n * C + i], inp[n * C + i] * r * w[i], 1e-13);
  }
  auto fi = test::cast_vec<float>(inp), fw = test::cast_vec<float>(w);
  std::vector<float> fout(N * C), frstd(N);
  rmsnorm_forward(fout.data(), frstd.data(), fi.data(), fw.data(), N, C, kEps);
  test::expect_all_near(fout, out, 1e-5, "float rmsnorm");
}

TEST(RMSNorm, BackwardMatchesFiniteDifferencesAndAccumulates) {
  auto inp = randn(N * C, 5, "inp"), w = randn(C, 5, "w"), r = randn(N * C, 5, "r");
  std::vector<double> out(N * C), rstd(N);
  auto loss = [&] {
    rmsnorm_forward(out.data(), rstd.data(), inp.data(), w.data(), N, C, kEps);
    return test::dot(out, r);
  };
  loss();
  std::vector<double> dinp(N * C, 0.0), dw(C, 0.0);
  rmsnorm_backward(dinp.data(), dw.data(), r.data(), inp.data(), w.data(), rstd.data(), N, C);
  test::expect_grad_matches(loss, inp, dinp, "dinp");
  test::expect_grad_matches(loss, w, dw, "dweight");

  std::vector<double> dinp2(N * C, -1.0), dw2(C, -1.0);
  rmsnorm_backward(dinp2.data(), dw2.data(), r.data(), inp.data(), w.data(), rstd.data(), N, C);
  for (size_t i = 0; i < dinp.size(); ++i) EXPECT_NEAR(dinp2[i], dinp[i] - 1.0, 1e-12);
  for (int64_t i = 0; i < C; ++i) EXPECT_NEAR(dw2[i], dw[i] - 1.0, 1e-12);
}

TEST(RMSNormAddsOne, ForwardMatchesNaiveAndBackwardFiniteDifferences) {
  auto inp = randn(N * C, 9, "inp"), w = randn(C, 9, "w", 0.3), r = randn(N * C, 9, "r");
  std::vector<double> out(N * C), rstd(N);
  auto loss = [&] {
    rmsnorm_forward(out.data(), rstd.data(), inp.data(), w.data(), N, C, kEps, true);
    return test::dot(out, r);
  };
  loss();
  for (int64_t n = 0; n < N; ++n) {  // x / sqrt(mean(x^2) + eps) * (1 + w)
    double ss = 0;
    for (int64_t i = 0; i < C; ++i) ss += inp[n * C + i] * inp[n * C + i];
    const double rs = 1.0 / std::sqrt(ss / C + kEps);
    EXPECT_NEAR(rstd[n], rs, 1e-14);
    for (int64_t i = 0; i < C; ++i)
      EXPECT_NEAR(out[n * C + i], inp[n * C + i] * rs * (1.0 + w[i]), 1e-13);
  }
  std::vector<double> dinp(N * C, 0.0), dw(C, 0.0);
  rmsnorm_backward(dinp.data(), dw.data(), r.data(), inp.data(), w.data(), rstd.data(), N, C, true);
  test::expect_grad_matches(loss, inp, dinp, "dinp");
  test::expect_grad_matches(loss, w, dw, "dweight");

  std::vector<double> dinp2(N * C, -1.0), dw2(C, -1.0);  // backward accumulates
  rmsnorm_backward(dinp2.data(), dw2.data(), r.data(), inp.data(), w.data(), rstd.data(), N, C,
                   true);
  for (size_t i = 0; i < dinp.size(); ++i) EXPECT_NEAR(dinp2[i], dinp[i] - 1.0, 1e-12);
  for (int64_t i = 0; i < C; ++i) EXPECT_NEAR(dw2[i], dw[i] - 1.0, 1e-12);
}

TEST(RMSNormAddsOne, FloatMatchesDoubleAndEqualsPlainNormOfOnePlusW) {
  auto inp = randn(N * C, 10, "inp"), w = randn(C, 10, "w", 0.3), d = randn(N * C, 10, "d");
  auto fi = test::cast_vec<float>(inp), fw = test::cast_vec<float>(w),
       fd = test::cast_vec<float>(d);
  std::vector<double> out(N * C), rstd(N), dinp(N * C, 0.0), dw(C, 0.0);
  rmsnorm_forward(out.data(), rstd.data(), inp.data(), w.data(), N, C, kEps, true);
  rmsnorm_backward(dinp.data(), dw.data(), d.data(), inp.data(), w.data(), rstd.data(), N, C, true);
  std::vector<float> fout(N * C), frstd(N), fdinp(N * C, 0.0f), fdw(C, 0.0f);
  rmsnorm_forward(fout.data(), frstd.data(), fi.data(), fw.data(), N, C, kEps, true);
  rmsnorm_backward(fdinp.data(), fdw.data(), fd.data(), fi.data(), fw.data(), frstd.data(), N, C,
                   true);
  test::expect_all_near(fout, out, 1e-5, "float rmsnorm (1 + w)");
  test::expect_all_near(fdinp, dinp, 1e-5, "float rmsnorm (1 + w) dinp");
  // The plain norm with gain 1 + w gives the same output and input gradient;
  // the weight gradient is the plain norm's too (d(1 + w)/dw = 1).
  std::vector<double> g(C), pout(N * C), prstd(N), pdinp(N * C, 0.0), pdw(C, 0.0);
  for (int64_t i = 0; i < C; ++i) g[i] = 1.0 + w[i];
  rmsnorm_forward(pout.data(), prstd.data(), inp.data(), g.data(), N, C, kEps);
  rmsnorm_backward(pdinp.data(), pdw.data(), d.data(), inp.data(), g.data(), prstd.data(), N, C);
  for (size_t i = 0; i < out.size(); ++i) {
    EXPECT_NEAR(out[i], pout[i], 1e-14);
    EXPECT_NEAR(dinp[i], pdinp[i], 1e-13);
  }
  for (int64_t i = 0; i < C; ++i) EXPECT_NEAR(dw[i], pdw[i], 1e-13);
}

TEST(Norm, WeightGradientsIndependentOfThreadCount) {
  const int64_t n = 157, c = 203;  // parallel path, ragged last column block
  auto inp = randn<float>(n * c, 6, "inp"), w = randn<float>(c, 6, "w"),
       b = randn<float>(c, 6, "b"), d = randn<float>(n * c, 6, "d");
  std::vector<float> out(n * c), mean(n), rstd(n);
  layernorm_forward(out.data(), mean.data(), rstd.data(), inp.data(), w.data(), b.data(), n, c,
                    kEps);
  auto run = [&](int threads) {
    std::vector<float> dinp(n * c, 0.0f), dw(c, 0.0f), db(c, 0.0f), rdw(c, 0.0f);
    test::with_threads(threads, [&] {
      layernorm_backward(dinp.data(), dw.data(), db.data(), d.data(), inp.data(), w.data(),
                         mean.data(), rstd.data(), n, c);
      rmsnorm_backward<float>(nullptr, rdw.data(), d.data(), inp.data(), w.data(), rstd.data(), n,
                              c);
    });
    return std::vector<std::vector<float>>{dinp, dw, db, rdw};
  };
  EXPECT_EQ(run(1), run(3));
}

}  // namespace
}  // namespace parallm::cpu
