// Every op of src/ops on the test device against the host stream (as
// ggml's test-backend-ops holds every backend against the CPU): the same
// inputs, copied to test device memory, give the same bits, and the host
// code of this test never reads device memory except through copies. A
// buffer of the wrong device is a clear error naming it.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "ops/activation.h"
#include "ops/attention.h"
#include "ops/cross_entropy.h"
#include "ops/embedding.h"
#include "ops/grouped_gemm.h"
#include "ops/lowp.h"
#include "ops/matmul.h"
#include "ops/moe_rows.h"
#include "ops/nf4.h"
#include "ops/norm.h"
#include "ops/optimizer.h"
#include "ops/rope.h"
#include "tensor/tensor.h"
#include "tensor/test_device_memory.h"

namespace parallm {
namespace {

const ops::Stream& H = ops::Stream::host();
const ops::Stream& D = ops::Stream::test_device();

// One operand on both sides: host values (h) and a test device copy (d).
template <class T>
class Twin {
 public:
  Twin(Allocator& dev, std::vector<T> v)
      : host_(std::move(v)),
        dev_(Tensor::zeros(dev, {static_cast<int64_t>(host_.size())}, dtype_of<T>(),
                           MemTag::Workspace, Device::Test)) {
    Allocator a;
    Tensor h =
        Tensor::zeros(a, {static_cast<int64_t>(host_.size())}, dtype_of<T>(), MemTag::Workspace);
    std::memcpy(h.raw(), host_.data(), host_.size() * sizeof(T));
    dev_.copy_from(h);
  }
  T* h() { return host_.data(); }
  T* d() const { return static_cast<T*>(dev_.raw()); }
  // The device's values, bit for bit equal to the host's.
  void expect_same(const char* what) const {
    Allocator a;
    Tensor back =
        Tensor::zeros(a, {static_cast<int64_t>(host_.size())}, dtype_of<T>(), MemTag::Workspace);
    back.copy_from(dev_);
    EXPECT_EQ(std::memcmp(back.raw(), host_.data(), host_.size() * sizeof(T)), 0)
        << what << ": the test device's result differs from the host's";
  }

 private:
  std::vector<T> host_;
  Tensor dev_;
};

class OpsBackends : public ::testing::Test {
 protected:
  template <class T = float>
  Twin<T> rand(int64_t n, double lo = -1.0, double hi = 1.0) {
    std::uniform_real_distribution<double> u(lo, hi);
    std::vector<T> v(static_cast<size_t>(n));
    for (T& x : v) x = static_cast<T>(u(rng_));
    return Twin<T>(dev_, std::move(v));
  }
  template <class T>
  Twin<T> of(std::vector<T> v) {
    return Twin<T>(dev_, std::move(v));
  }
  TestDeviceMemory mem_;
  Allocator dev_{mem_};
  std::mt19937_64 rng_{20261206};
};

TEST_F(OpsBackends, Activations) {
  const int64_t n = 1000;
  auto x = rand(n), g = rand(n), u = rand(n), dy = rand(n), out = rand(n), d1 = rand(n),
       d2 = rand(n);
  ops::gelu_forward(H, out.h(), x.h(), n);
  ops::gelu_forward(D, out.d(), x.d(), n);
  out.expect_same("gelu_forward");
  ops::gelu_backward(H, d1.h(), x.h(), dy.h(), n);
  ops::gelu_backward(D, d1.d(), x.d(), dy.d(), n);
  d1.expect_same("gelu_backward");
  for (bool geglu : {false, true}) {
    auto fwd = geglu ? ops::geglu_forward : ops::swiglu_forward;
    auto bwd = geglu ? ops::geglu_backward : ops::swiglu_backward;
    fwd(H, out.h(), g.h(), u.h(), n);
    fwd(D, out.d(), g.d(), u.d(), n);
    out.expect_same(geglu ? "geglu_forward" : "swiglu_forward");
    bwd(H, d1.h(), d2.h(), dy.h(), g.h(), u.h(), n);
    bwd(D, d1.d(), d2.d(), dy.d(), g.d(), u.d(), n);
    d1.expect_same("gated backward dgate");
    d2.expect_same("gated backward dup");
  }
  ops::add_inplace(H, out.h(), x.h(), n);
  ops::add_inplace(D, out.d(), x.d(), n);
  ops::axpy(H, out.h(), 0.37f, g.h(), n);
  ops::axpy(D, out.d(), 0.37f, g.d(), n);
  out.expect_same("add_inplace, axpy");
}

TEST_F(OpsBackends, Norms) {
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
  for (bool one : {false, true}) {
    ops::rmsnorm_forward(H, out.h(), rstd.h(), x.h(), w.h(), N, C, 1e-6, one);
    ops::rmsnorm_forward(D, out.d(), rstd.d(), x.d(), w.d(), N, C, 1e-6, one);
    ops::rmsnorm_backward(H, dx.h(), dw.h(), dy.h(), x.h(), w.h(), rstd.h(), N, C, one);
    ops::rmsnorm_backward(D, dx.d(), dw.d(), dy.d(), x.d(), w.d(), rstd.d(), N, C, one);
    for (auto* t : {&out, &rstd, &dx, &dw}) t->expect_same("rmsnorm");
  }
}

TEST_F(OpsBackends, RopeEmbeddingLoss) {
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
  EXPECT_EQ(ops::log_sum_exp(H, logits.h(), V), ops::log_sum_exp(D, logits.d(), V));
  ops::ce_softmax_grad_inplace(H, logits.h(), se.h(), tgt.h(), scale.h(), n, V, 2);
  ops::ce_softmax_grad_inplace(D, logits.d(), se.d(), tgt.d(), scale.d(), n, V, 2);
  for (auto* t : {&mx, &se, &tl, &logits}) t->expect_same("cross entropy");
}

TEST_F(OpsBackends, Optimizers) {
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
  EXPECT_EQ(ops::sum_squares(H, g.h(), n), ops::sum_squares(D, g.d(), n));
  EXPECT_FALSE(ops::has_nonfinite(D, g.d(), n));
  auto bad = of<float>({1.0f, std::numeric_limits<float>::infinity()});
  EXPECT_TRUE(ops::has_nonfinite(D, bad.d(), 2));
}

TEST_F(OpsBackends, Attention) {
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
  EXPECT_EQ(ops::attention_backward_auto_split(H, dh), ops::attention_backward_auto_split(D, dd));
  for (ops::AttnBwdSplit split : {ops::AttnBwdSplit::ByKvHead, ops::AttnBwdSplit::TwoPass}) {
    ops::attention_backward(H, dq.h(), dk.h(), dv.h(), dout.h(), q.h(), k.h(), v.h(), out.h(),
                            lse.h(), dh, 0.35, split);
    ops::attention_backward(D, dq.d(), dk.d(), dv.d(), dout.d(), q.d(), k.d(), v.d(), out.d(),
                            lse.d(), dd, 0.35, split);
  }
  for (auto* t : {&out, &lse, &dq, &dk, &dv}) t->expect_same("attention");
}

TEST_F(OpsBackends, PagedAttention) {
  const ops::PagedAttnDims pd{.Hq = 4, .Hkv = 2, .D = 8, .block_size = 4, .num_blocks = 5};
  const int64_t row = pd.Hkv * pd.D, pool_n = pd.num_blocks * pd.block_size * row;
  auto kp = rand(pool_n), vp = rand(pool_n);
  auto blocks = of<int32_t>({3, 0, 4});  // one sequence of 10 positions
  auto krows = rand(10 * row), vrows = rand(10 * row);
  for (auto [pool, rows] : {std::pair{&kp, &krows}, std::pair{&vp, &vrows}}) {
    ops::paged_kv_write(H, pool->h(), pd.num_blocks, pd.block_size, row, blocks.h(), 3, 0, 10,
                        rows->h());
    ops::paged_kv_write(D, pool->d(), pd.num_blocks, pd.block_size, row, blocks.d(), 3, 0, 10,
                        rows->d());
    pool->expect_same("paged_kv_write");
  }
  auto q = rand(3 * pd.Hq * pd.D), out = rand(3 * pd.Hq * pd.D), lse = rand(3 * pd.Hq);
  for (ops::PagedAttnPath path : {ops::PagedAttnPath::Direct, ops::PagedAttnPath::Gemm}) {
    const ops::PagedSeq sh{.Tq = 3, .q_pos0 = 7, .blocks = blocks.h(), .n_blocks = 3};
    const ops::PagedSeq sd{.Tq = 3, .q_pos0 = 7, .blocks = blocks.d(), .n_blocks = 3};
    ops::paged_attention_forward(H, out.h(), lse.h(), q.h(), kp.h(), vp.h(), &sh, 1, pd, 0.3, path);
    ops::paged_attention_forward(D, out.d(), lse.d(), q.d(), kp.d(), vp.d(), &sd, 1, pd, 0.3, path);
    out.expect_same("paged_attention_forward");
    lse.expect_same("paged_attention_forward lse");
  }
}

TEST_F(OpsBackends, Matmuls) {
  const int64_t M = 5, K = 24, N = 16;
  auto a = rand(M * K), w = rand(N * K), bias = rand(N), c = rand(M * N), dy = rand(M * N);
  auto dx = rand(M * K), dw = rand(N * K), db = rand(N);
  ops::gemm(H, false, true, M, N, K, 0.5f, a.h(), K, w.h(), K, 1.0f, c.h(), N);
  ops::gemm(D, false, true, M, N, K, 0.5f, a.d(), K, w.d(), K, 1.0f, c.d(), N);
  c.expect_same("gemm");
  ops::linear_forward(H, c.h(), a.h(), w.h(), bias.h(), M, K, N);
  ops::linear_forward(D, c.d(), a.d(), w.d(), bias.d(), M, K, N);
  c.expect_same("linear_forward");
  ops::linear_backward(H, dx.h(), dw.h(), db.h(), dy.h(), a.h(), w.h(), M, K, N);
  ops::linear_backward(D, dx.d(), dw.d(), db.d(), dy.d(), a.d(), w.d(), M, K, N);
  for (auto* t : {&dx, &dw, &db}) t->expect_same("linear_backward");

  auto c2 = rand(M * 8), w2 = rand(8 * K);
  const ops::SkinnyPart ph[] = {{w.h(), N, K, c.h(), N}, {w2.h(), 8, K, c2.h(), 8}};
  const ops::SkinnyPart pdv[] = {{w.d(), N, K, c.d(), N}, {w2.d(), 8, K, c2.d(), 8}};
  ops::skinny_gemm_nt_parts(H, M, K, a.h(), K, ph, 2);
  ops::skinny_gemm_nt_parts(D, M, K, a.d(), K, pdv, 2);
  c.expect_same("skinny parts");
  c2.expect_same("skinny parts");

  // 16-bit: rounding, the GEMM (native or emulated), the skinny forms.
  for (bool native : {true, false}) {
    ops::LowpGemm g(ops::LowpType::BF16, native);
    auto a16 = of<uint16_t>(std::vector<uint16_t>(M * K)),
         w16 = of<uint16_t>(std::vector<uint16_t>(N * K));
    ops::round_to_lowp(H, a16.h(), a.h(), M * K, g.type());
    ops::round_to_lowp(D, a16.d(), a.d(), M * K, g.type());
    ops::round_to_lowp(H, w16.h(), w.h(), N * K, g.type());
    ops::round_to_lowp(D, w16.d(), w.d(), N * K, g.type());
    a16.expect_same("round_to_lowp");
    Allocator scratch;
    ops::lowp_gemm(H, g, false, true, M, N, K, a16.h(), K, w16.h(), K, 0.0f, c.h(), N, scratch);
    ops::lowp_gemm(D, g, false, true, M, N, K, a16.d(), K, w16.d(), K, 0.0f, c.d(), N, dev_);
    c.expect_same("lowp_gemm");
    ops::round_inplace(H, a.h(), M * K, g.type());
    ops::round_inplace(D, a.d(), M * K, g.type());
    a.expect_same("round_inplace");
    ops::skinny_gemm_nt_lowp(H, M, N, K, 1.0f, a.h(), K, w16.h(), g.type(), K, 0.0f, c.h(), N);
    ops::skinny_gemm_nt_lowp(D, M, N, K, 1.0f, a.d(), K, w16.d(), g.type(), K, 0.0f, c.d(), N);
    c.expect_same("skinny_gemm_nt_lowp");
    const ops::SkinnyPart lh[] = {{w16.h(), N, K, c.h(), N}};
    const ops::SkinnyPart ld[] = {{w16.d(), N, K, c.d(), N}};
    ops::skinny_gemm_nt_parts_lowp(H, M, K, a.h(), K, lh, 1, g.type());
    ops::skinny_gemm_nt_parts_lowp(D, M, K, a.d(), K, ld, 1, g.type());
    c.expect_same("skinny_gemm_nt_parts_lowp");
  }
}

TEST_F(OpsBackends, GroupedLinearsAndMoeRows) {
  const int64_t G = 3, IC = 16, OC = 8, M = 7;
  auto off = of<int64_t>({0, 3, 3, 7});
  auto x = rand(M * IC), w = rand(G * OC * IC), b = rand(G * OC), y = rand(M * OC);
  auto dy = rand(M * OC), dx = rand(M * IC), dw = rand(G * OC * IC), db = rand(G * OC);
  ops::grouped_linear_forward(H, y.h(), x.h(), w.h(), b.h(), off.h(), G, IC, OC);
  ops::grouped_linear_forward(D, y.d(), x.d(), w.d(), b.d(), off.d(), G, IC, OC);
  ops::grouped_linear_backward(H, dx.h(), dw.h(), db.h(), dy.h(), x.h(), w.h(), off.h(), G, IC, OC);
  ops::grouped_linear_backward(D, dx.d(), dw.d(), db.d(), dy.d(), x.d(), w.d(), off.d(), G, IC, OC);
  for (auto* t : {&y, &dx, &dw, &db}) t->expect_same("grouped linear");
  ops::LowpGemm g(ops::LowpType::BF16);
  auto x16 = of<uint16_t>(std::vector<uint16_t>(M * IC));
  auto w16 = of<uint16_t>(std::vector<uint16_t>(G * OC * IC));
  auto dy16 = of<uint16_t>(std::vector<uint16_t>(M * OC));
  ops::round_to_lowp(H, x16.h(), x.h(), M * IC, g.type());
  ops::round_to_lowp(D, x16.d(), x.d(), M * IC, g.type());
  ops::round_to_lowp(H, w16.h(), w.h(), G * OC * IC, g.type());
  ops::round_to_lowp(D, w16.d(), w.d(), G * OC * IC, g.type());
  ops::round_to_lowp(H, dy16.h(), dy.h(), M * OC, g.type());
  ops::round_to_lowp(D, dy16.d(), dy.d(), M * OC, g.type());
  Allocator scratch;
  ops::grouped_linear_forward_lowp(H, g, scratch, y.h(), x16.h(), w16.h(), b.h(), off.h(), G, IC,
                                   OC);
  ops::grouped_linear_forward_lowp(D, g, dev_, y.d(), x16.d(), w16.d(), b.d(), off.d(), G, IC, OC);
  ops::grouped_linear_backward_lowp(H, g, scratch, dx.h(), dw.h(), db.h(), dy16.h(), dy.h(),
                                    x16.h(), w16.h(), off.h(), G, IC, OC);
  ops::grouped_linear_backward_lowp(D, g, dev_, dx.d(), dw.d(), db.d(), dy16.d(), dy.d(), x16.d(),
                                    w16.d(), off.d(), G, IC, OC);
  for (auto* t : {&y, &dx, &dw, &db}) t->expect_same("grouped linear (bf16)");

  // Four routing rows, two assignments each, one dropped; send rows permuted.
  const int64_t C = 12, S = 8;
  auto fed = of<int64_t>({0, 1, 2, 3});
  auto send_row = of<int64_t>({5, 0, 7, -1, 2, 6, 1, 3});
  auto xs = rand(4 * C), send = rand(S * C), gate = rand(8), out = rand(4 * C);
  auto dsend = rand(S * C), dgate = rand(8), dxs = rand(4 * C), dout = rand(4 * C);
  const ops::AssignedRows rh{fed.h(), 4, 2, send_row.h()}, rd{fed.d(), 4, 2, send_row.d()};
  ops::moe_gather(H, send.h(), xs.h(), rh, C);
  ops::moe_gather(D, send.d(), xs.d(), rd, C);
  ops::moe_combine(H, out.h(), send.h(), gate.h(), rh, C);
  ops::moe_combine(D, out.d(), send.d(), gate.d(), rd, C);
  ops::moe_combine_backward(H, dsend.h(), dgate.h(), dout.h(), send.h(), gate.h(), rh, C);
  ops::moe_combine_backward(D, dsend.d(), dgate.d(), dout.d(), send.d(), gate.d(), rd, C);
  ops::moe_gather_backward(H, dxs.h(), dsend.h(), rh, C);
  ops::moe_gather_backward(D, dxs.d(), dsend.d(), rd, C);
  for (auto* t : {&send, &out, &dsend, &dgate, &dxs}) t->expect_same("moe rows");
}

TEST_F(OpsBackends, WrongDeviceIsAClearError) {
  auto x = rand(16), y = rand(16);
  std::vector<float> host(16);
  try {
    ops::add_inplace(H, host.data(), x.d(), 16);
    FAIL() << "a test device buffer on the host stream ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("test device memory, given to an op on the cpu stream"),
              std::string::npos)
        << e.what();
  }
  try {
    ops::add_inplace(D, y.d(), host.data(), 16);
    FAIL() << "a host buffer on the test device stream ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("is not a test device address"), std::string::npos)
        << e.what();
  }
  // QLoRA's NF4 linear is host-only so far, and says so.
  Allocator a;
  std::vector<float> wv(64 * 2, 0.5f);
  const ops::Nf4Weight w(a, wv.data(), 2, 64, false);
  auto in = rand(64), out = rand(2);
  EXPECT_THROW(ops::nf4_linear_forward(D, dev_, out.d(), in.d(), w, nullptr, 1), Error);
}

}  // namespace
}  // namespace parallm
