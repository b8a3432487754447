// Every op of src/ops on the test device against the host stream (as
// ggml's test-backend-ops holds every backend against the CPU): the same
// inputs, copied to test device memory, give the same bits, and the host
// code of this test never reads device memory except through copies. The
// ops every device backend has are the shared cases (common/ops_backend_cases.h, also
// run on a GPU by ops_cuda_gpu_test.cpp); the rest are here. A buffer of the
// wrong device is a clear error naming it.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "ops/grouped_gemm.h"
#include "ops/lowp.h"
#include "ops/moe_rows.h"
#include "ops/nf4.h"
#include "tensor/test_device_memory.h"
#include "common/ops_backend_cases.h"

namespace parallm {
namespace {

const ops::Stream& H = ops::Stream::host();
const ops::Stream& D = ops::Stream::test_device();

class OpsBackends : public ::testing::Test {
 protected:
  template <class T = float>
  backend_cases::Twin<T> rand(int64_t n, double lo = -1.0, double hi = 1.0) {
    return cases_.rand<T>(n, lo, hi);
  }
  template <class T>
  backend_cases::Twin<T> of(std::vector<T> v) {
    return cases_.of<T>(std::move(v));
  }
  TestDeviceMemory mem_;
  Allocator dev_{mem_};
  backend_cases::Cases cases_{D, dev_, 0.0};  // the same CPU kernels: the same bits
};

TEST_F(OpsBackends, Activations) {
  cases_.activations();
  // The ops no device backend has yet (ops/device_backend.h).
  const int64_t n = 1000;
  auto x = rand(n), g = rand(n), u = rand(n), dy = rand(n), out = rand(n), d1 = rand(n),
       d2 = rand(n);
  ops::geglu_forward(H, out.h(), g.h(), u.h(), n);
  ops::geglu_forward(D, out.d(), g.d(), u.d(), n);
  out.expect_same("geglu_forward");
  ops::geglu_backward(H, d1.h(), d2.h(), dy.h(), g.h(), u.h(), n);
  ops::geglu_backward(D, d1.d(), d2.d(), dy.d(), g.d(), u.d(), n);
  d1.expect_same("geglu_backward dgate");
  d2.expect_same("geglu_backward dup");
  ops::axpy(H, out.h(), 0.37f, x.h(), n);
  ops::axpy(D, out.d(), 0.37f, x.d(), n);
  out.expect_same("axpy");
}

TEST_F(OpsBackends, Norms) {
  cases_.norms();
  const int64_t N = 7, C = 96;  // Gemma's (1 + w) RMSNorm
  auto x = rand(N * C), w = rand(C), dy = rand(N * C), out = rand(N * C), rstd = rand(N),
       dx = rand(N * C), dw = rand(C);
  ops::rmsnorm_forward(H, out.h(), rstd.h(), x.h(), w.h(), N, C, 1e-6, true);
  ops::rmsnorm_forward(D, out.d(), rstd.d(), x.d(), w.d(), N, C, 1e-6, true);
  ops::rmsnorm_backward(H, dx.h(), dw.h(), dy.h(), x.h(), w.h(), rstd.h(), N, C, true);
  ops::rmsnorm_backward(D, dx.d(), dw.d(), dy.d(), x.d(), w.d(), rstd.d(), N, C, true);
  for (auto* t : {&out, &rstd, &dx, &dw}) t->expect_same("rmsnorm (1 + w)");
}

TEST_F(OpsBackends, RopeEmbeddingLoss) {
  cases_.rope_embedding_loss();
  auto logits = rand(11, -4, 4);
  EXPECT_EQ(ops::log_sum_exp(H, logits.h(), 11), ops::log_sum_exp(D, logits.d(), 11));
}

TEST_F(OpsBackends, Optimizers) { cases_.optimizers(); }

TEST_F(OpsBackends, Attention) {
  // Both of the CPU kernel's backward splits.
  cases_.attention({ops::AttnBwdSplit::ByKvHead, ops::AttnBwdSplit::TwoPass});
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
  cases_.matmuls();
  const int64_t M = 5, K = 24, N = 16;
  auto a = rand(M * K), w = rand(N * K), c = rand(M * N);
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
}

TEST_F(OpsBackends, Nf4Linear) {
  // QLoRA's NF4 weight quantised from test device values, in test device
  // memory, against the host's from the same values (double quantisation:
  // both scale levels), forward and the input gradient.
  const int64_t N = 3, K = 128, M = 2;
  auto w = rand(N * K), in = rand(M * K), out = rand(M * N), dout = rand(M * N),
       din = rand(M * K);
  Allocator host;
  const ops::Nf4Weight wh(host, w.h(), N, K, true);
  const ops::Nf4Weight wd(dev_, w.d(), N, K, true);
  ops::nf4_linear_forward(H, host, out.h(), in.h(), wh, nullptr, M);
  ops::nf4_linear_forward(D, dev_, out.d(), in.d(), wd, nullptr, M);
  out.expect_same("nf4_linear_forward");
  ops::nf4_linear_backward_input(H, host, din.h(), dout.h(), wh, M);
  ops::nf4_linear_backward_input(D, dev_, din.d(), dout.d(), wd, M);
  din.expect_same("nf4_linear_backward_input");
}

}  // namespace
}  // namespace parallm
