// cuBLASLt GEMMs and the linear layer against the CPU kernels: fp32 within
// 1e-5 of the magnitude sum_k |a||b| (TF32 off), bf16 against the CPU in float
// on bf16-rounded inputs within bf16 rounding; all four transposes, odd and
// GPT-2-sized shapes, the bias/GELU epilogue (fused and unfused) and the
// accumulating backward with fp32 weight and bias gradients, and the backward
// through a GELU (fused DGELU epilogue or unfused) against the unfused chain.
#include "kernels/cuda/blas.h"

#include <cuda_bf16.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iostream>
#include <random>
#include <type_traits>
#include <vector>

#include "common/gpu_test.h"
#include "kernels/cpu/activation.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cuda/activation.h"
#include "tensor/half.h"

namespace parallm {
namespace {

using testing::DeviceBuffer;
using BlasGpu = testing::GpuTest;

std::vector<float> random_vec(size_t n, uint32_t seed, float lo = -1.f, float hi = 1.f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}

// bf16 values (as the device stores them) and their exact float values.
std::vector<__nv_bfloat16> to_bf16(const std::vector<float>& x) {
  std::vector<__nv_bfloat16> out(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    uint16_t bits = f32_to_bf16(x[i]);
    std::memcpy(static_cast<void*>(&out[i]), &bits, 2);
  }
  return out;
}
std::vector<float> to_f32(const std::vector<__nv_bfloat16>& x) {
  std::vector<float> out(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    uint16_t bits;
    std::memcpy(&bits, &x[i], 2);
    out[i] = bf16_to_f32(bits);
  }
  return out;
}
std::vector<float> round_bf16(const std::vector<float>& x) { return to_f32(to_bf16(x)); }
std::vector<float> abs_vec(std::vector<float> x) {
  for (auto& v : x) v = std::fabs(v);
  return x;
}

// |got - ref| <= tol * scale + 1e-30 elementwise, reporting the worst element.
void expect_close(const std::vector<float>& got, const std::vector<float>& ref,
                  const std::vector<float>& scale, double tol, const char* what) {
  ASSERT_EQ(got.size(), ref.size());
  double worst = 0;
  size_t at = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    double err = std::fabs(double(got[i]) - ref[i]) / (double(scale[i]) + 1e-30);
    if (!(err <= worst)) {  // NaN counts as worst
      worst = err;
      at = i;
    }
  }
  EXPECT_LE(worst, tol) << what << ": element " << at << " got " << got[at] << " want " << ref[at]
                        << " (scale " << scale[at] << ")";
}

struct GemmCase {
  bool ta, tb;
  int64_t M, N, K;
};

// Row-major op(A) (M, K), op(B) (K, N), C (M, N) with padded leading dimensions.
template <class T>
void check_gemm(cuda::Blas& blas, const GemmCase& g, float alpha, float beta, double tol,
                uint32_t seed) {
  const int64_t lda = (g.ta ? g.M : g.K) + 3, ldb = (g.tb ? g.K : g.N) + 1, ldc = g.N + 2;
  const int64_t a_rows = g.ta ? g.K : g.M, b_rows = g.tb ? g.N : g.K;
  constexpr bool kBf16 = std::is_same_v<T, __nv_bfloat16>;
  auto prep = [&](std::vector<float> v) { return kBf16 ? round_bf16(v) : v; };
  auto A = prep(random_vec(a_rows * lda, seed));
  auto B = prep(random_vec(b_rows * ldb, seed + 1));
  auto C = prep(random_vec(g.M * ldc, seed + 2));
  std::vector<float> ref = C, scale(C.size());
  cpu::gemm<float>(g.ta, g.tb, g.M, g.N, g.K, alpha, A.data(), lda, B.data(), ldb, beta, ref.data(),
                   ldc);
  auto absA = abs_vec(A), absB = abs_vec(B);
  for (size_t i = 0; i < C.size(); ++i) scale[i] = std::fabs(beta * C[i]);
  cpu::gemm<float>(g.ta, g.tb, g.M, g.N, g.K, std::fabs(alpha), absA.data(), lda, absB.data(), ldb,
                   1.f, scale.data(), ldc);
  for (auto& s : scale) s = std::max(s, 1e-6f);
  std::vector<float> got;
  if constexpr (kBf16) {
    DeviceBuffer<T> dA(to_bf16(A)), dB(to_bf16(B)), dC(to_bf16(C));
    cuda::gemm<T>(blas, g.ta, g.tb, g.M, g.N, g.K, alpha, dA.get(), lda, dB.get(), ldb, beta,
                  dC.get(), ldc, nullptr);
    got = to_f32(dC.to_host());
  } else {
    DeviceBuffer<T> dA(A), dB(B), dC(C);
    cuda::gemm<T>(blas, g.ta, g.tb, g.M, g.N, g.K, alpha, dA.get(), lda, dB.get(), ldb, beta,
                  dC.get(), ldc, nullptr);
    got = dC.to_host();
  }
  // The padding columns of C are left as they were.
  for (int64_t i = 0; i < g.M; ++i)
    for (int64_t j = g.N; j < ldc; ++j) ASSERT_EQ(got[i * ldc + j], C[i * ldc + j]);
  ::testing::ScopedTrace trace(__FILE__, __LINE__,
                               ::testing::Message() << "ta=" << g.ta << " tb=" << g.tb << " M="
                                                    << g.M << " N=" << g.N << " K=" << g.K);
  expect_close(got, ref, scale, tol, kBf16 ? "bf16 gemm" : "fp32 gemm");
}

constexpr double kF32Tol = 1e-5;
constexpr double kBf16Tol = 1e-2;

TEST_F(BlasGpu, GemmFp32AllTransposesAndOddShapes) {
  cuda::Blas blas;
  uint32_t seed = 1;
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (GemmCase g : {GemmCase{ta, tb, 7, 13, 5}, GemmCase{ta, tb, 1, 37, 64},
                         GemmCase{ta, tb, 65, 1, 129}, GemmCase{ta, tb, 130, 96, 200}})
        check_gemm<float>(blas, g, 0.75f, 0.5f, kF32Tol, seed += 3);
}

TEST_F(BlasGpu, GemmBf16AllTransposesAndOddShapes) {
  cuda::Blas blas;
  uint32_t seed = 100;
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (GemmCase g : {GemmCase{ta, tb, 7, 13, 5}, GemmCase{ta, tb, 1, 37, 64},
                         GemmCase{ta, tb, 65, 1, 129}, GemmCase{ta, tb, 130, 96, 200}})
        check_gemm<__nv_bfloat16>(blas, g, 1.f, 1.f, kBf16Tol, seed += 3);
}

TEST_F(BlasGpu, GemmBetaZeroIgnoresCAndKZeroScales) {
  cuda::Blas blas;
  check_gemm<float>(blas, {false, false, 9, 11, 0}, 1.f, 0.25f, kF32Tol, 7);
  check_gemm<float>(blas, {false, true, 9, 11, 0}, 1.f, 0.f, kF32Tol, 8);
  // beta = 0 never reads C, so NaN there does not leak out.
  std::vector<float> A = random_vec(6 * 4, 9), B = random_vec(4 * 5, 10);
  std::vector<float> C(6 * 5, std::nanf("")), ref(6 * 5, 0.f);
  cpu::gemm<float>(false, false, 6, 5, 4, 1.f, A.data(), 4, B.data(), 5, 0.f, ref.data(), 5);
  DeviceBuffer<float> dA(A), dB(B), dC(C);
  cuda::gemm<float>(blas, false, false, 6, 5, 4, 1.f, dA.get(), 4, dB.get(), 5, 0.f, dC.get(), 5,
                    nullptr);
  auto got = dC.to_host();
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], ref[i], 1e-5f * 4);
}

// Operands that start one element into their buffers (views: 4- or 2-byte
// aligned, not the 256 bytes cuBLASLt's heuristic assumes unless told).
TEST_F(BlasGpu, GemmOnUnalignedViews) {
  cuda::Blas blas;
  const int64_t M = 24, N = 40, K = 32;
  auto A = random_vec(M * K + 1, 90), B = random_vec(K * N + 1, 91);
  std::vector<float> ref(M * N + 1, 0.f), scale(M * N + 1, 0.f);
  cpu::gemm<float>(false, false, M, N, K, 1.f, A.data() + 1, K, B.data() + 1, N, 0.f,
                   ref.data() + 1, N);
  auto absA = abs_vec(A), absB = abs_vec(B);
  cpu::gemm<float>(false, false, M, N, K, 1.f, absA.data() + 1, K, absB.data() + 1, N, 0.f,
                   scale.data() + 1, N);
  for (auto& v : scale) v = std::max(v, 1e-6f);
  DeviceBuffer<float> dA(A), dB(B), dC(M * N + 1);
  cuda::gemm<float>(blas, false, false, M, N, K, 1.f, dA.get() + 1, K, dB.get() + 1, N, 0.f,
                    dC.get() + 1, N, nullptr);
  expect_close(dC.to_host(), ref, scale, kF32Tol, "fp32 gemm on views");
  auto Ab = round_bf16(A), Bb = round_bf16(B);
  std::vector<float> refb(M * N + 1, 0.f);
  cpu::gemm<float>(false, false, M, N, K, 1.f, Ab.data() + 1, K, Bb.data() + 1, N, 0.f,
                   refb.data() + 1, N);
  DeviceBuffer<__nv_bfloat16> dAb(to_bf16(Ab)), dBb(to_bf16(Bb)), dCb(M * N + 1);
  cuda::gemm<__nv_bfloat16>(blas, false, false, M, N, K, 1.f, dAb.get() + 1, K, dBb.get() + 1, N,
                            0.f, dCb.get() + 1, N, nullptr);
  expect_close(to_f32(dCb.to_host()), refb, scale, kBf16Tol, "bf16 gemm on views");
}

TEST_F(BlasGpu, GemmGpt2SizedShape) {
  cuda::Blas blas;
  check_gemm<float>(blas, {false, true, 768, 2304, 3072}, 1.f, 0.f, kF32Tol, 21);
  check_gemm<__nv_bfloat16>(blas, {false, true, 768, 2304, 3072}, 1.f, 0.f, kBf16Tol, 22);
  check_gemm<__nv_bfloat16>(blas, {true, false, 768, 2304, 3072}, 1.f, 1.f, kBf16Tol, 23);
}

// The reference of linear_forward: pre (N, OC) and its magnitude scale.
struct LinearRef {
  std::vector<float> pre, scale;
};
LinearRef linear_ref(const std::vector<float>& inp, const std::vector<float>& w,
                     const std::vector<float>* bias, int64_t N, int64_t IC, int64_t OC) {
  LinearRef r{std::vector<float>(N * OC), std::vector<float>(N * OC)};
  cpu::linear_forward<float>(r.pre.data(), inp.data(), w.data(), bias ? bias->data() : nullptr, N,
                             IC, OC);
  auto ai = abs_vec(inp), aw = abs_vec(w);
  std::vector<float> ab;
  if (bias) ab = abs_vec(*bias);
  cpu::linear_forward<float>(r.scale.data(), ai.data(), aw.data(), bias ? ab.data() : nullptr, N,
                             IC, OC);
  for (auto& s : r.scale) s = std::max(s, 1e-6f);
  return r;
}

template <class T>
void check_linear_forward(int64_t N, int64_t IC, int64_t OC, bool with_bias, cuda::Epilogue ep,
                          bool with_pre, double tol, double gelu_tol, uint32_t seed) {
  constexpr bool kBf16 = std::is_same_v<T, __nv_bfloat16>;
  auto prep = [&](std::vector<float> v) { return kBf16 ? round_bf16(v) : v; };
  auto inp = prep(random_vec(N * IC, seed)), w = prep(random_vec(OC * IC, seed + 1));
  auto bias = prep(random_vec(OC, seed + 2));
  LinearRef ref = linear_ref(inp, w, with_bias ? &bias : nullptr, N, IC, OC);
  auto upload = [&](const std::vector<float>& v) {
    if constexpr (kBf16)
      return DeviceBuffer<T>(to_bf16(v));
    else
      return DeviceBuffer<T>(v);
  };
  auto download = [&](const DeviceBuffer<T>& d) {
    if constexpr (kBf16)
      return to_f32(d.to_host());
    else
      return d.to_host();
  };
  DeviceBuffer<T> d_inp = upload(inp), d_w = upload(w), d_b = upload(bias);
  DeviceBuffer<T> d_out(N * OC), d_pre(N * OC);
  cuda::Blas blas;
  const bool gelu = ep == cuda::Epilogue::Gelu;
  cuda::linear_forward<T>(blas, d_out.get(), with_pre ? d_pre.get() : nullptr, d_inp.get(),
                          d_w.get(), with_bias ? d_b.get() : nullptr, N, IC, OC, ep, nullptr);
  auto out = download(d_out);
  ::testing::ScopedTrace trace(__FILE__, __LINE__,
                               ::testing::Message() << "N=" << N << " IC=" << IC << " OC=" << OC
                                                    << " bias=" << with_bias << " gelu=" << gelu
                                                    << " pre=" << with_pre);
  if (!gelu) {
    expect_close(out, ref.pre, ref.scale, tol, "linear out");
    return;
  }
  if (with_pre) expect_close(download(d_pre), ref.pre, ref.scale, tol, "pre-activation");
  std::vector<double> pre_d(ref.pre.begin(), ref.pre.end()), want_d(N * OC);
  cpu::gelu_forward<double>(want_d.data(), pre_d.data(), N * OC);
  std::vector<float> want(want_d.begin(), want_d.end()), bound(N * OC);
  // GELU's slope is at most 1.13, so the GEMM's error carries over scaled by
  // that; gelu_tol * max(1, |x|) allows for the epilogue's own tanh and for
  // the rounding of bf16 outputs.
  double worst_tanh = 0, worst_erf = 0;
  for (int64_t i = 0; i < N * OC; ++i) {
    const double x = pre_d[i];
    bound[i] =
        static_cast<float>(1.13 * tol * ref.scale[i] + gelu_tol * std::max(1.0, std::fabs(x)));
    worst_tanh = std::max(worst_tanh, std::fabs(out[i] - want_d[i]));
    worst_erf =
        std::max(worst_erf, std::fabs(out[i] - 0.5 * x * (1 + std::erf(x / std::sqrt(2.)))));
  }
  // Which GELU the epilogue computes, for the record (the tanh form is expected).
  std::cout << "  [gelu " << (kBf16 ? "bf16" : "fp32") << " OC=" << OC
            << "] max |out - gelu_tanh| = " << worst_tanh
            << ", max |out - gelu_erf| = " << worst_erf << "\n";
  expect_close(out, want, bound, 1.0, "gelu out");
}

TEST_F(BlasGpu, LinearForwardBiasFp32AndBf16) {
  for (bool bias : {false, true}) {
    check_linear_forward<float>(33, 64, 48, bias, cuda::Epilogue::None, false, kF32Tol, 0, 30);
    check_linear_forward<float>(1, 7, 13, bias, cuda::Epilogue::None, false, kF32Tol, 0, 31);
    check_linear_forward<__nv_bfloat16>(33, 64, 48, bias, cuda::Epilogue::None, false, kBf16Tol, 0,
                                        32);
    check_linear_forward<__nv_bfloat16>(5, 3, 13, bias, cuda::Epilogue::None, false, kBf16Tol, 0,
                                        33);
  }
  check_linear_forward<float>(4, 0, 8, true, cuda::Epilogue::None, false, kF32Tol, 0, 34);  // IC=0
}

// OC a multiple of 8: the fused GELU epilogue (if cuBLASLt offers it). Its
// tanh may be the hardware approximation (relative error ~2^-11), so the GELU
// output gets 5e-4 of max(1, |x|) in fp32.
TEST_F(BlasGpu, LinearForwardGeluFusedShapes) {
  for (bool bias : {false, true})
    for (bool pre : {false, true}) {
      check_linear_forward<float>(40, 64, 64, bias, cuda::Epilogue::Gelu, pre, kF32Tol, 5e-4, 40);
      check_linear_forward<__nv_bfloat16>(40, 64, 64, bias, cuda::Epilogue::Gelu, pre, kBf16Tol,
                                          1e-2, 41);
    }
  check_linear_forward<__nv_bfloat16>(256, 768, 3072, true, cuda::Epilogue::Gelu, true, kBf16Tol,
                                      1e-2, 42);
}

// OC = 13 (no fused GELU input matrix): the separate bias/GELU pass, whose tanhf
// is accurate, so the fp32 output is held to 1e-5.
TEST_F(BlasGpu, LinearForwardGeluUnfusedShapes) {
  for (bool bias : {false, true})
    for (bool pre : {false, true}) {
      check_linear_forward<float>(9, 17, 13, bias, cuda::Epilogue::Gelu, pre, kF32Tol, 1e-5, 50);
      check_linear_forward<__nv_bfloat16>(9, 17, 13, bias, cuda::Epilogue::Gelu, pre, kBf16Tol,
                                          1e-2, 51);
    }
}

// Backward accumulates: gradients start non-zero and must end at start + delta.
template <class T>
void check_linear_backward(int64_t N, int64_t IC, int64_t OC, double tol_dinp, uint32_t seed) {
  constexpr bool kBf16 = std::is_same_v<T, __nv_bfloat16>;
  auto prep = [&](std::vector<float> v) { return kBf16 ? round_bf16(v) : v; };
  auto inp = prep(random_vec(N * IC, seed)), w = prep(random_vec(OC * IC, seed + 1));
  auto dout = prep(random_vec(N * OC, seed + 2));
  auto dinp0 = prep(random_vec(N * IC, seed + 3));
  auto dw0 = random_vec(OC * IC, seed + 4), db0 = random_vec(OC, seed + 5);
  std::vector<float> dinp = dinp0, dw = dw0, db = db0;
  cpu::linear_backward<float>(dinp.data(), dw.data(), db.data(), dout.data(), inp.data(), w.data(),
                              N, IC, OC);
  // Magnitude scales: the same sums over absolute values.
  std::vector<float> s_dinp = abs_vec(dinp0), s_dw = abs_vec(dw0), s_db = abs_vec(db0);
  auto ai = abs_vec(inp), aw = abs_vec(w), ad = abs_vec(dout);
  cpu::linear_backward<float>(s_dinp.data(), s_dw.data(), s_db.data(), ad.data(), ai.data(),
                              aw.data(), N, IC, OC);
  auto upload = [&](const std::vector<float>& v) {
    if constexpr (kBf16)
      return DeviceBuffer<T>(to_bf16(v));
    else
      return DeviceBuffer<T>(v);
  };
  DeviceBuffer<T> d_inp = upload(inp), d_w = upload(w), d_dout = upload(dout),
                  d_dinp = upload(dinp0);
  DeviceBuffer<float> d_dw(dw0), d_db(db0);
  cuda::Blas blas;
  cuda::linear_backward<T>(blas, d_dinp.get(), d_dw.get(), d_db.get(), d_dout.get(), d_inp.get(),
                           d_w.get(), N, IC, OC, nullptr);
  std::vector<float> got_dinp;
  if constexpr (kBf16)
    got_dinp = to_f32(d_dinp.to_host());
  else
    got_dinp = d_dinp.to_host();
  ::testing::ScopedTrace trace(__FILE__, __LINE__,
                               ::testing::Message() << "N=" << N << " IC=" << IC << " OC=" << OC);
  expect_close(got_dinp, dinp, s_dinp, tol_dinp, "dinp");
  // Weight and bias gradients are fp32 accumulators in both precisions; bf16
  // inputs multiply exactly in fp32, so only summation order differs.
  expect_close(d_dw.to_host(), dw, s_dw, kBf16 ? 1e-4 : kF32Tol, "dweight");
  expect_close(d_db.to_host(), db, s_db, kBf16 ? 1e-4 : kF32Tol, "dbias");

  // Null outputs are skipped; a second call adds again (dbias deterministic).
  cuda::linear_backward<T>(blas, nullptr, nullptr, d_db.get(), d_dout.get(), d_inp.get(), d_w.get(),
                           N, IC, OC, nullptr);
  auto db_twice = d_db.to_host();
  DeviceBuffer<float> d_db2(db0);
  cuda::linear_backward<T>(blas, nullptr, nullptr, d_db2.get(), d_dout.get(), d_inp.get(),
                           d_w.get(), N, IC, OC, nullptr);
  cuda::linear_backward<T>(blas, nullptr, nullptr, d_db2.get(), d_dout.get(), d_inp.get(),
                           d_w.get(), N, IC, OC, nullptr);
  auto db_again = d_db2.to_host();
  for (int64_t c = 0; c < OC; ++c) EXPECT_EQ(db_twice[c], db_again[c]) << "dbias column " << c;
}

TEST_F(BlasGpu, LinearBackwardAccumulatesFp32) {
  check_linear_backward<float>(33, 64, 48, kF32Tol, 60);
  check_linear_backward<float>(1, 7, 13, kF32Tol, 61);
  check_linear_backward<float>(300, 17, 70, kF32Tol, 62);
}

TEST_F(BlasGpu, LinearBackwardAccumulatesBf16) {
  check_linear_backward<__nv_bfloat16>(33, 64, 48, kBf16Tol, 70);
  check_linear_backward<__nv_bfloat16>(1, 7, 13, kBf16Tol, 71);
  check_linear_backward<__nv_bfloat16>(1024, 768, 768, kBf16Tol, 72);
}

// linear_backward_gelu against the unfused chain, both on the CPU (float on
// the same, bf16-rounded, inputs; the bf16 input gradient rounded to bf16 as
// the GPU stores it) and on the GPU (linear_backward into a zeroed dh, then
// gelu_backward into a zeroed dpre). dpre starts as NaN: it is written, never
// read. dweight/dbias start non-zero: they accumulate. A second run from the
// same start must agree bitwise. pre_offset > 0 places pre that many elements
// into its buffer (a view not 16-byte aligned: the unfused path).
template <class T>
void check_linear_backward_gelu(int64_t N, int64_t IC, int64_t OC, int64_t pre_offset,
                                uint32_t seed) {
  constexpr bool kBf16 = std::is_same_v<T, __nv_bfloat16>;
  auto prep = [&](std::vector<float> v) { return kBf16 ? round_bf16(v) : v; };
  const int64_t n = N * IC;
  auto pre = prep(random_vec(n, seed, -3.f, 3.f));
  std::vector<float> h(n);
  cpu::gelu_forward<float>(h.data(), pre.data(), n);
  h = prep(h);
  auto w = prep(random_vec(OC * IC, seed + 1)), dout = prep(random_vec(N * OC, seed + 2));
  auto dw0 = random_vec(OC * IC, seed + 3), db0 = random_vec(OC, seed + 4);

  // CPU reference: dh = dout * w (+ the layer's own dw, db), then dpre = gelu'(pre) dh.
  std::vector<float> dh(n, 0.f), dw = dw0, db = db0, want(n, 0.f);
  cpu::linear_backward<float>(dh.data(), dw.data(), db.data(), dout.data(), h.data(), w.data(), N,
                              IC, OC);
  cpu::gelu_backward<float>(want.data(), pre.data(), prep(dh).data(), n);
  // Scales: fp32 per element, |gelu'(pre)| (plus 0.05 for the rounding of
  // gelu' itself where it crosses zero) times sum |dout||w|; bf16 the largest
  // |dpre|. dw, db: the sums over absolute values.
  std::vector<float> s_dh(n, 0.f), s_dw = abs_vec(dw0), s_db = abs_vec(db0);
  auto ah = abs_vec(h), aw = abs_vec(w), ad = abs_vec(dout);
  cpu::linear_backward<float>(s_dh.data(), s_dw.data(), s_db.data(), ad.data(), ah.data(),
                              aw.data(), N, IC, OC);
  std::vector<double> pre_d(pre.begin(), pre.end()), ones(n, 1.0), slope(n, 0.0);
  cpu::gelu_backward<double>(slope.data(), pre_d.data(), ones.data(), n);
  float largest = 0.f;
  for (float v : want) largest = std::max(largest, std::fabs(v));
  std::vector<float> s_dpre(n);
  for (int64_t i = 0; i < n; ++i)
    s_dpre[i] = kBf16 ? std::max(largest, 1e-6f)
                      : std::max(static_cast<float>((std::fabs(slope[i]) + 0.05) * s_dh[i]), 1e-6f);

  auto upload = [&](const std::vector<float>& v) {
    if constexpr (kBf16)
      return DeviceBuffer<T>(to_bf16(v));
    else
      return DeviceBuffer<T>(v);
  };
  auto download = [&](const DeviceBuffer<T>& d) {
    if constexpr (kBf16)
      return to_f32(d.to_host());
    else
      return d.to_host();
  };
  std::vector<float> pre_buf(pre_offset, 0.f);
  pre_buf.insert(pre_buf.end(), pre.begin(), pre.end());
  DeviceBuffer<T> d_pre = upload(pre_buf), d_h = upload(h), d_w = upload(w), d_dout = upload(dout);
  const T* pre_view = d_pre.get() + pre_offset;
  const std::vector<float> nans(n, std::nanf(""));
  cuda::Blas blas;
  ::testing::ScopedTrace trace(__FILE__, __LINE__,
                               ::testing::Message()
                                   << (kBf16 ? "bf16" : "fp32") << " N=" << N << " IC=" << IC
                                   << " OC=" << OC << " pre_offset=" << pre_offset);
  struct Run {
    std::vector<float> dpre, dw, db;
  };
  auto run_fused = [&] {
    DeviceBuffer<T> d_dpre = upload(nans);
    DeviceBuffer<float> d_dw(dw0), d_db(db0);
    cuda::linear_backward_gelu<T>(blas, d_dpre.get(), pre_view, d_dw.get(), d_db.get(),
                                  d_dout.get(), d_h.get(), d_w.get(), N, IC, OC, nullptr);
    return Run{download(d_dpre), d_dw.to_host(), d_db.to_host()};
  };
  const Run got = run_fused();
  expect_close(got.dpre, want, s_dpre, kBf16 ? kBf16Tol : kF32Tol, "dpre vs CPU");
  expect_close(got.dw, dw, s_dw, kBf16 ? 1e-4 : kF32Tol, "dweight vs CPU");
  expect_close(got.db, db, s_db, kBf16 ? 1e-4 : kF32Tol, "dbias vs CPU");

  // The unfused GPU chain the fused call replaces.
  {
    DeviceBuffer<T> d_dh(n), d_dpre(n);
    cuda::linear_backward<T>(blas, d_dh.get(), nullptr, nullptr, d_dout.get(), d_h.get(), d_w.get(),
                             N, IC, OC, nullptr);
    cuda::gelu_backward<T>(d_dpre.get(), pre_view, d_dh.get(), n, nullptr);
    auto chain = download(d_dpre);
    double worst = 0;
    for (int64_t i = 0; i < n; ++i)
      worst = std::max(worst, std::fabs(double(got.dpre[i]) - chain[i]) / s_dpre[i]);
    std::cout << "  [linear_backward_gelu " << (kBf16 ? "bf16" : "fp32") << " N=" << N
              << " IC=" << IC << " OC=" << OC << " pre_offset=" << pre_offset
              << "] max |dpre - unfused GPU chain| / scale = " << worst << "\n";
    expect_close(got.dpre, chain, s_dpre, kBf16 ? kBf16Tol : kF32Tol, "dpre vs GPU chain");
  }

  // Deterministic: a second run from the same start agrees bitwise.
  const Run again = run_fused();
  for (int64_t i = 0; i < n; ++i)
    ASSERT_EQ(std::memcmp(&got.dpre[i], &again.dpre[i], sizeof(float)), 0) << "dpre " << i;
  for (size_t i = 0; i < got.dw.size(); ++i)
    ASSERT_EQ(std::memcmp(&got.dw[i], &again.dw[i], sizeof(float)), 0) << "dweight " << i;
  for (size_t i = 0; i < got.db.size(); ++i)
    ASSERT_EQ(std::memcmp(&got.db[i], &again.db[i], sizeof(float)), 0) << "dbias " << i;
}

// GPT-2's MLP projection (IC = 3072, OC = 768): bf16 takes the fused DGELU
// epilogue where cuBLASLt offers it; fp32 is always unfused.
TEST_F(BlasGpu, LinearBackwardGeluGpt2Shape) {
  check_linear_backward_gelu<__nv_bfloat16>(512, 3072, 768, 0, 80);
  check_linear_backward_gelu<float>(512, 3072, 768, 0, 81);
}

// Shapes the epilogue cannot take (IC % 8 != 0, pre not 16-byte aligned) and
// small fusable ones.
TEST_F(BlasGpu, LinearBackwardGeluOddShapes) {
  for (int64_t off : {0, 1}) {
    check_linear_backward_gelu<float>(33, 100, 7, off, 90);
    check_linear_backward_gelu<__nv_bfloat16>(33, 100, 7, off, 91);
    check_linear_backward_gelu<float>(1, 64, 5, off, 92);
    check_linear_backward_gelu<__nv_bfloat16>(1, 64, 5, off, 93);
    check_linear_backward_gelu<__nv_bfloat16>(70, 24, 40, off, 94);
  }
}

// OC = 0: dout * weight is empty, so dpre is written with zeros.
TEST_F(BlasGpu, LinearBackwardGeluEmptyReduction) {
  const int64_t N = 3, IC = 16;
  for (bool bf16 : {false, true}) {
    cuda::Blas blas;
    auto pre = random_vec(N * IC, 95);
    if (bf16) {
      DeviceBuffer<__nv_bfloat16> d_pre(to_bf16(pre)), d_h(to_bf16(pre)),
          d_dpre(to_bf16(std::vector<float>(N * IC, std::nanf("")))), d_w(1), d_dout(1);
      cuda::linear_backward_gelu<__nv_bfloat16>(blas, d_dpre.get(), d_pre.get(), nullptr, nullptr,
                                                d_dout.get(), d_h.get(), d_w.get(), N, IC, 0,
                                                nullptr);
      for (float v : to_f32(d_dpre.to_host())) EXPECT_EQ(v, 0.f);
    } else {
      DeviceBuffer<float> d_pre(pre), d_h(pre), d_dpre(std::vector<float>(N * IC, std::nanf(""))),
          d_w(1), d_dout(1);
      cuda::linear_backward_gelu<float>(blas, d_dpre.get(), d_pre.get(), nullptr, nullptr,
                                        d_dout.get(), d_h.get(), d_w.get(), N, IC, 0, nullptr);
      for (float v : d_dpre.to_host()) EXPECT_EQ(v, 0.f);
    }
  }
}

}  // namespace
}  // namespace parallm
