// The ops every device backend has (ops/device_backend.h), run on a device
// stream against the host stream on the same inputs, as ggml's
// test-backend-ops holds each backend against the CPU. Shared by the test
// device's suite (OpsBackends, bit for bit: the same CPU kernels run there)
// and the GPU's (OpsCuda, within a bound: other kernels, other orders). The
// host code here reads device memory only through copies. The dense ops are
// here; paged attention, merges, MoE rows, grouped linears and 16-bit ops in
// ops_backend_cases_rows.h (included at the end).
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "ops/activation.h"
#include "ops/attention.h"
#include "ops/cross_entropy.h"
#include "ops/embedding.h"
#include "ops/matmul.h"
#include "ops/norm.h"
#include "ops/optimizer.h"
#include "ops/rope.h"
#include "ops/stream.h"
#include "tensor/tensor.h"

namespace parallm::backend_cases {

// One operand on both sides: host values (h) and a device copy (d).
template <class T>
class Twin {
 public:
  Twin(Allocator& dev, std::vector<T> v, double tol)
      : host_(std::move(v)),
        dev_(Tensor::zeros(dev, {static_cast<int64_t>(host_.size())}, dtype_of<T>(),
                           MemTag::Workspace)),
        tol_(tol) {
    Allocator a;
    Tensor h =
        Tensor::zeros(a, {static_cast<int64_t>(host_.size())}, dtype_of<T>(), MemTag::Workspace);
    std::memcpy(h.raw(), host_.data(), host_.size() * sizeof(T));
    dev_.copy_from(h);
  }
  T* h() { return host_.data(); }
  T* d() const { return static_cast<T*>(dev_.raw()); }
  // The device's values: the host's bits (tolerance 0), or each within
  // tol * (1 + |host value|).
  void expect_same(const char* what) const {
    Allocator a;
    Tensor back =
        Tensor::zeros(a, {static_cast<int64_t>(host_.size())}, dtype_of<T>(), MemTag::Workspace);
    back.copy_from(dev_);
    const T* got = static_cast<const T*>(back.raw());
    if (tol_ == 0.0) {
      EXPECT_EQ(std::memcmp(got, host_.data(), host_.size() * sizeof(T)), 0)
          << what << ": the device's result differs from the host's";
      return;
    }
    for (size_t i = 0; i < host_.size(); ++i) {
      const double want = static_cast<double>(host_[i]), have = static_cast<double>(got[i]);
      if (have == want) continue;  // infinities too (a merged row no key reached: lse -inf)
      ASSERT_LE(std::abs(have - want), tol_ * (1.0 + std::abs(want)))
          << what << ": element " << i << " is " << have << " on the device, " << want
          << " on the host";
    }
  }

 private:
  std::vector<T> host_;
  Tensor dev_;
  double tol_;
};

// The device under test: its stream, an allocator of its memory, the bound.
class Cases {
 public:
  Cases(const ops::Stream& dev_stream, Allocator& dev, double tol)
      : D(dev_stream), dev_(dev), tol_(tol) {}

  template <class T = float>
  Twin<T> rand(int64_t n, double lo = -1.0, double hi = 1.0) {
    return Twin<T>(dev_, draw<T>(n, lo, hi), tol_);
  }
  template <class T>
  Twin<T> of(std::vector<T> v) {
    return Twin<T>(dev_, std::move(v), tol_);
  }
  // An operand every device must give bit for bit (tolerance 0 whatever the
  // bound): rounding to 16 bits has one right answer, and a bound on 16-bit
  // bits read as integers would pass a wrong rounding.
  template <class T>
  Twin<T> exact(std::vector<T> v) {
    return Twin<T>(dev_, std::move(v), 0.0);
  }
  template <class T = float>
  std::vector<T> draw(int64_t n, double lo = -1.0, double hi = 1.0) {
    std::uniform_real_distribution<double> u(lo, hi);
    std::vector<T> v(static_cast<size_t>(n));
    for (T& x : v) x = static_cast<T>(u(rng_));
    return v;
  }
  // Two host results of a reduction, within the bound.
  void expect_near(double host, double dev, const char* what) const {
    if (tol_ == 0.0) {
      EXPECT_EQ(host, dev) << what;
      return;
    }
    EXPECT_LE(std::abs(dev - host), tol_ * (1.0 + std::abs(host))) << what;
  }

  void activations();
  void norms();
  void rope_embedding_loss();
  void optimizers();
  // splits: the CPU kernel's backward splits to run (none: the device's choice).
  void attention(std::vector<ops::AttnBwdSplit> splits = {});
  void matmuls();
  // ops_backend_cases_rows.h. paths: the CPU kernel's paged paths to run
  // (none: Auto; a GPU has one path and ignores it).
  void paged_attention(std::vector<ops::PagedAttnPath> paths = {});
  void attention_merge();
  void moe_rows();
  void grouped_linears();
  // Rounding to bf16 and f16 (bit for bit on every device) and the 16-bit
  // GEMM; then the grouped linears with 16-bit operands.
  void lowp();
  void grouped_linears_lowp();

  const ops::Stream& H = ops::Stream::host();
  const ops::Stream& D;

 private:
  Allocator& dev_;
  double tol_;
  std::mt19937_64 rng_{20261206};
};

inline void Cases::activations() {
  const int64_t n = 1000;
  auto x = rand(n), g = rand(n), u = rand(n), dy = rand(n), out = rand(n), d1 = rand(n),
       d2 = rand(n);
  ops::gelu_forward(H, out.h(), x.h(), n);
  ops::gelu_forward(D, out.d(), x.d(), n);
  out.expect_same("gelu_forward");
  ops::gelu_backward(H, d1.h(), x.h(), dy.h(), n);
  ops::gelu_backward(D, d1.d(), x.d(), dy.d(), n);
  d1.expect_same("gelu_backward");
  ops::swiglu_forward(H, out.h(), g.h(), u.h(), n);
  ops::swiglu_forward(D, out.d(), g.d(), u.d(), n);
  out.expect_same("swiglu_forward");
  ops::swiglu_backward(H, d1.h(), d2.h(), dy.h(), g.h(), u.h(), n);
  ops::swiglu_backward(D, d1.d(), d2.d(), dy.d(), g.d(), u.d(), n);
  d1.expect_same("swiglu_backward dgate");
  d2.expect_same("swiglu_backward dup");
  ops::geglu_forward(H, out.h(), g.h(), u.h(), n);
  ops::geglu_forward(D, out.d(), g.d(), u.d(), n);
  out.expect_same("geglu_forward");
  ops::geglu_backward(H, d1.h(), d2.h(), dy.h(), g.h(), u.h(), n);
  ops::geglu_backward(D, d1.d(), d2.d(), dy.d(), g.d(), u.d(), n);
  d1.expect_same("geglu_backward dgate");
  d2.expect_same("geglu_backward dup");
  ops::add_inplace(H, out.h(), x.h(), n);
  ops::add_inplace(D, out.d(), x.d(), n);
  out.expect_same("add_inplace");
  ops::axpy(H, out.h(), 0.37f, x.h(), n);
  ops::axpy(D, out.d(), 0.37f, x.d(), n);
  out.expect_same("axpy");
  auto bias = rand(40);  // n = 25 rows of 40
  ops::add_bias_rows(H, out.h(), bias.h(), n / 40, 40);
  ops::add_bias_rows(D, out.d(), bias.d(), n / 40, 40);
  out.expect_same("add_bias_rows");
}

inline void Cases::norms() {
  const int64_t N = 7, C = 96;
  auto x = rand(N * C), w = rand(C), b = rand(C), dy = rand(N * C), out = rand(N * C),
       mean = rand(N), rstd = rand(N), dx = rand(N * C), dw = rand(C), db = rand(C);
  ops::layernorm_forward(H, out.h(), mean.h(), rstd.h(), x.h(), w.h(), b.h(), N, C, 1e-5);
  ops::layernorm_forward(D, out.d(), mean.d(), rstd.d(), x.d(), w.d(), b.d(), N, C, 1e-5);
  ops::layernorm_backward(H, dx.h(), dw.h(), db.h(), dy.h(), x.h(), w.h(), mean.h(), rstd.h(), N,
                          C);
  ops::layernorm_backward(D, dx.d(), dw.d(), db.d(), dy.d(), x.d(), w.d(), mean.d(), rstd.d(), N,
                          C);
  for (auto* t : {&out, &mean, &rstd, &dx, &dw, &db}) t->expect_same("layernorm");
  for (bool adds_one : {false, true}) {  // true: Gemma's (1 + w)
    ops::rmsnorm_forward(H, out.h(), rstd.h(), x.h(), w.h(), N, C, 1e-6, adds_one);
    ops::rmsnorm_forward(D, out.d(), rstd.d(), x.d(), w.d(), N, C, 1e-6, adds_one);
    ops::rmsnorm_backward(H, dx.h(), dw.h(), dy.h(), x.h(), w.h(), rstd.h(), N, C, adds_one);
    ops::rmsnorm_backward(D, dx.d(), dw.d(), dy.d(), x.d(), w.d(), rstd.d(), N, C, adds_one);
    for (auto* t : {&out, &rstd, &dx, &dw})
      t->expect_same(adds_one ? "rmsnorm (1 + w)" : "rmsnorm");
  }
}

inline void Cases::rope_embedding_loss() {
  const int64_t B = 2, T = 5, Hh = 3, Dd = 8, V = 11, C = 16;
  auto x = rand(B * T * Hh * Dd);
  auto pos = of<int64_t>({3, 4, 5, 6, 7});
  auto inv = of<double>({1.0, 0.1, 0.01, 0.001});
  ops::rope_forward(H, x.h(), pos.h(), B, T, Hh, Dd, inv.h());
  ops::rope_forward(D, x.d(), pos.d(), B, T, Hh, Dd, inv.d());
  ops::rope_backward(H, x.h(), pos.h(), B, T, Hh, Dd, 1e4);
  ops::rope_backward(D, x.d(), pos.d(), B, T, Hh, Dd, 1e4);
  x.expect_same("rope");

  auto tok = of<int32_t>({0, 3, 10, 7, 3, 12});  // 12: outside a shard of rows [2, 11)
  auto table = rand(V * C), out = rand(6 * C), dtable = rand(V * C);
  ops::embedding_forward(H, out.h(), tok.h(), table.h(), 6, C, 2, 9, true);
  ops::embedding_forward(D, out.d(), tok.d(), table.d(), 6, C, 2, 9, true);
  ops::embedding_backward(H, dtable.h(), tok.h(), out.h(), 6, C, 2, 9);
  ops::embedding_backward(D, dtable.d(), tok.d(), out.d(), 6, C, 2, 9);
  out.expect_same("embedding_forward");
  dtable.expect_same("embedding_backward");

  const int64_t n = 6;
  auto logits = rand(n * V, -4, 4), mx = rand(n), se = rand(n), tl = rand(n), scale = rand(n);
  auto tgt = of<int32_t>({1, -1, 5, 10, 12, 0});
  ops::ce_row_max(H, mx.h(), logits.h(), n, V);
  ops::ce_row_max(D, mx.d(), logits.d(), n, V);
  ops::ce_row_sumexp(H, se.h(), logits.h(), mx.h(), n, V);
  ops::ce_row_sumexp(D, se.d(), logits.d(), mx.d(), n, V);
  ops::ce_target_logit(H, tl.h(), logits.h(), tgt.h(), n, V, 2);
  ops::ce_target_logit(D, tl.d(), logits.d(), tgt.d(), n, V, 2);
  ops::ce_softmax_grad_inplace(H, logits.h(), se.h(), tgt.h(), scale.h(), n, V, 2);
  ops::ce_softmax_grad_inplace(D, logits.d(), se.d(), tgt.d(), scale.d(), n, V, 2);
  for (auto* t : {&mx, &se, &tl, &logits}) t->expect_same("cross entropy");
  // A row whose exp overflows f32 unless the max is taken out first.
  auto row = rand(3000, -100, 100);
  expect_near(ops::log_sum_exp(H, row.h(), 3000), ops::log_sum_exp(D, row.d(), 3000),
              "log_sum_exp");
}

inline void Cases::optimizers() {
  const int64_t n = 777;
  auto p = rand(n), g = rand(n), m = rand(n), v = rand(n, 0.0, 1.0), buf = rand(n);
  const ops::AdamWParams h{.lr = 1e-3, .weight_decay = 0.1, .step = 3};
  ops::adamw_step(H, p.h(), g.h(), m.h(), v.h(), n, h);
  ops::adamw_step(D, p.d(), g.d(), m.d(), v.d(), n, h);
  ops::adam_step(H, p.h(), g.h(), m.h(), v.h(), n, h);
  ops::adam_step(D, p.d(), g.d(), m.d(), v.d(), n, h);
  const ops::SgdParams s{.lr = 0.1, .momentum = 0.9, .nesterov = true};
  ops::sgd_step(H, p.h(), g.h(), buf.h(), n, s);
  ops::sgd_step(D, p.d(), g.d(), buf.d(), n, s);
  ops::scale_inplace(H, g.h(), n, 0.5f);
  ops::scale_inplace(D, g.d(), n, 0.5f);
  for (auto* t : {&p, &m, &v, &buf, &g}) t->expect_same("optimizer");
  expect_near(ops::sum_squares(H, g.h(), n), ops::sum_squares(D, g.d(), n), "sum_squares");
  EXPECT_FALSE(ops::has_nonfinite(D, g.d(), n));
  auto bad = of<float>({1.0f, std::numeric_limits<float>::infinity()});
  EXPECT_TRUE(ops::has_nonfinite(D, bad.d(), 2));
}

inline void Cases::attention(std::vector<ops::AttnBwdSplit> splits) {
  const int64_t B = 2, T = 6, Hq = 4, Hkv = 2, Dd = 8;
  auto q = rand(B * T * Hq * Dd), k = rand(B * T * Hkv * Dd), v = rand(B * T * Hkv * Dd);
  auto out = rand(B * T * Hq * Dd), lse = rand(B * Hq * T), dout = rand(B * T * Hq * Dd);
  auto dq = rand(B * T * Hq * Dd), dk = rand(B * T * Hkv * Dd), dv = rand(B * T * Hkv * Dd);
  auto docs = of<int64_t>({0, 0, 0, 3, 3, 3, 0, 0, 2, 2, 2, 2});  // (B, T) document starts
  ops::AttnDims d{.B = B, .Tq = T, .Tk = T, .Hq = Hq, .Hkv = Hkv, .D = Dd};
  d.doc_ld = T;
  ops::AttnDims dh = d, dd = d;
  dh.doc_start = docs.h();
  dd.doc_start = docs.d();
  ops::attention_forward(H, out.h(), lse.h(), q.h(), k.h(), v.h(), dh, 0.35);
  ops::attention_forward(D, out.d(), lse.d(), q.d(), k.d(), v.d(), dd, 0.35);
  if (tol_ == 0.0) {  // the same kernel picks the same split
    EXPECT_EQ(ops::attention_backward_auto_split(H, dh), ops::attention_backward_auto_split(D, dd));
  }
  if (splits.empty()) splits.push_back(ops::attention_backward_auto_split(D, dd));
  for (ops::AttnBwdSplit split : splits) {
    ops::attention_backward(H, dq.h(), dk.h(), dv.h(), dout.h(), q.h(), k.h(), v.h(), out.h(),
                            lse.h(), dh, 0.35, split);
    ops::attention_backward(D, dq.d(), dk.d(), dv.d(), dout.d(), q.d(), k.d(), v.d(), out.d(),
                            lse.d(), dd, 0.35, split);
  }
  for (auto* t : {&out, &lse, &dq, &dk, &dv}) t->expect_same("attention");
}

inline void Cases::matmuls() {
  const int64_t M = 5, K = 24, N = 16;
  auto a = rand(M * K), w = rand(N * K), bias = rand(N), c = rand(M * N), dy = rand(M * N);
  auto dx = rand(M * K), dw = rand(N * K), db = rand(N);
  ops::gemm(H, false, true, M, N, K, 0.5f, a.h(), K, w.h(), K, 1.0f, c.h(), N);
  ops::gemm(D, false, true, M, N, K, 0.5f, a.d(), K, w.d(), K, 1.0f, c.d(), N);
  c.expect_same("gemm");
  ops::gemm(H, true, false, K, N, M, 1.0f, a.h(), K, dy.h(), N, 0.0f, dw.h(), N);
  ops::gemm(D, true, false, K, N, M, 1.0f, a.d(), K, dy.d(), N, 0.0f, dw.d(), N);
  dw.expect_same("gemm, A transposed");
  ops::linear_forward(H, c.h(), a.h(), w.h(), bias.h(), M, K, N);
  ops::linear_forward(D, c.d(), a.d(), w.d(), bias.d(), M, K, N);
  c.expect_same("linear_forward");
  ops::linear_backward(H, dx.h(), dw.h(), db.h(), dy.h(), a.h(), w.h(), M, K, N);
  ops::linear_backward(D, dx.d(), dw.d(), db.d(), dy.d(), a.d(), w.d(), M, K, N);
  for (auto* t : {&dx, &dw, &db}) t->expect_same("linear_backward");
}

}  // namespace parallm::backend_cases

#include "common/ops_backend_cases_rows.h"  // IWYU pragma: export
