// Times the flash-style CPU attention (kernels/cpu/attention.h) at GPT-2-124M
// shapes (B=4, T=256, H=12, D=64, float) and prints ms and GFLOP/s, beside two
// yardsticks: the same GEMM shapes with no softmax (the ceiling), and a naive
// forward that materialises all B*H*T*T scores. GFLOP/s count only the causal
// half of the work: forward 2*B*H*T*T*D flops, backward 2.5x that.
// Usage: attention_bench [B T H D reps]
#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "base/rng.h"
#include "bench_timing.h"
#include "kernels/cpu/attention.h"

using parallm::cpu::AttnDims;

namespace {
using parallm::bench::median_ms;
using parallm::bench::random_vec;

// Materialises scores (B, H, T, T), softmaxes with libm exp, multiplies by V.
void naive_forward(float* out, float* scores, const float* q, const float* k, const float* v,
                   const AttnDims& d, float scale) {
  const int64_t T = d.Tq, ld = d.Hq * d.D;
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t bh = 0; bh < d.B * d.Hq; ++bh) {
    const int64_t b = bh / d.Hq, h = bh % d.Hq;
    float* s = scores + bh * T * T;
    const int64_t off = b * T * ld + h * d.D;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, d.D, scale, q + off, ld, k + off, ld,
                0.0f, s, T);
    for (int64_t i = 0; i < T; ++i) {
      float* row = s + i * T;
      const float m = *std::max_element(row, row + i + 1);
      float sum = 0;
      for (int64_t j = 0; j <= i; ++j) sum += row[j] = std::exp(row[j] - m);
      for (int64_t j = 0; j <= i; ++j) row[j] /= sum;
      std::fill(row + i + 1, row + T, 0.0f);
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, d.D, T, 1.0f, s, T, v + off, ld, 0.0f,
                out + off, ld);
  }
}

// The forward's GEMMs alone (64-row query blocks against their visible keys).
void gemm_only_forward(float* out, const float* q, const float* k, const float* v,
                       const AttnDims& d) {
  const int64_t T = d.Tq, ld = d.Hq * d.D, nqb = (T + 63) / 64;
#pragma omp parallel
  {
    std::vector<float> s(64 * T);
#pragma omp for schedule(dynamic, 1)
    for (int64_t t = 0; t < d.B * d.Hq * nqb; ++t) {
      const int64_t qb = t % nqb, h = (t / nqb) % d.Hq, b = t / (nqb * d.Hq);
      const int64_t i0 = qb * 64, nq = std::min<int64_t>(64, T - i0), kn = i0 + nq;
      const int64_t qoff = (b * T + i0) * ld + h * d.D, koff = b * T * ld + h * d.D;
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, nq, kn, d.D, 1.0f, q + qoff, ld,
                  k + koff, ld, 0.0f, s.data(), kn);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, nq, d.D, kn, 1.0f, s.data(), kn,
                  v + koff, ld, 0.0f, out + qoff, ld);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  AttnDims d{.B = 4, .Tq = 256, .Tk = 256, .Hq = 12, .Hkv = 12, .D = 64};
  int reps = 20;
  if (argc >= 5) {
    d.B = std::atoll(argv[1]);
    d.Tq = d.Tk = std::atoll(argv[2]);
    d.Hq = d.Hkv = std::atoll(argv[3]);
    d.D = std::atoll(argv[4]);
  }
  if (argc >= 6) reps = std::atoi(argv[5]);
  const size_t n = static_cast<size_t>(d.B * d.Tq * d.Hq * d.D);
  const double scale = 1.0 / std::sqrt(static_cast<double>(d.D));
  auto q = random_vec(n, "q"), k = random_vec(n, "k"), v = random_vec(n, "v"),
       dout = random_vec(n, "dout");
  std::vector<float> out(n), lse(d.B * d.Hq * d.Tq), dq(n), dk(n), dv(n);
  const double fwd_gflop = 2.0 * d.B * d.Hq * d.Tq * d.Tk * d.D * 1e-9;

  std::printf("attention B=%lld T=%lld H=%lld D=%lld, %d threads, float\n",
              static_cast<long long>(d.B), static_cast<long long>(d.Tq),
              static_cast<long long>(d.Hq), static_cast<long long>(d.D), omp_get_max_threads());
  auto report = [&](const char* what, double ms, double gflop) {
    std::printf("  %-34s %8.3f ms  %7.1f GFLOP/s\n", what, ms, gflop / (ms * 1e-3));
  };
  const double fwd = median_ms(reps, [&] {
    parallm::cpu::attention_forward(out.data(), lse.data(), q.data(), k.data(), v.data(), d, scale);
  });
  report("forward", fwd, fwd_gflop);
  const double bwd = median_ms(reps, [&] {
    parallm::cpu::attention_backward(dq.data(), dk.data(), dv.data(), dout.data(), q.data(),
                                     k.data(), v.data(), out.data(), lse.data(), d, scale);
  });
  report("backward", bwd, 2.5 * fwd_gflop);
  report("forward + backward", fwd + bwd, 3.5 * fwd_gflop);

  const int prev_blas = openblas_get_num_threads();
  openblas_set_num_threads(1);  // as inside the kernel: OpenMP owns the cores
  std::vector<float> ws(n);
  const double gemm_ms =
      median_ms(reps, [&] { gemm_only_forward(ws.data(), q.data(), k.data(), v.data(), d); });
  report("forward GEMMs alone (ceiling)", gemm_ms, fwd_gflop);
  std::vector<float> scores(static_cast<size_t>(d.B * d.Hq * d.Tq * d.Tq));
  const double naive_ms = median_ms(reps, [&] {
    naive_forward(ws.data(), scores.data(), q.data(), k.data(), v.data(), d, float(scale));
  });
  report("naive materialised forward", naive_ms, fwd_gflop);
  openblas_set_num_threads(prev_blas);
  std::printf("  forward is %.0f%% GEMM time; naive needs %.1f MB of scores\n",
              100.0 * gemm_ms / fwd, scores.size() * 4.0 / 1e6);
  return 0;
}
