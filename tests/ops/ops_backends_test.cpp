// Every op of src/ops on the test device against the host stream (as
// ggml's test-backend-ops holds every backend against the CPU): the same
// inputs, copied to test device memory, give the same bits, and the host
// code of this test never reads device memory except through copies. The
// ops every device backend has are the shared cases (common/ops_backend_cases.h,
// ops_backend_cases_rows.h; also run on a GPU by ops_cuda_gpu_test.cpp); the
// rest (skinny GEMMs, NF4) are here. A buffer of the wrong device is a clear
// error naming it.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/ops_backend_cases.h"
#include "ops/lowp.h"
#include "ops/nf4.h"
#include "tensor/test_device_memory.h"

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

TEST_F(OpsBackends, Activations) { cases_.activations(); }
TEST_F(OpsBackends, Norms) { cases_.norms(); }
TEST_F(OpsBackends, RopeEmbeddingLoss) { cases_.rope_embedding_loss(); }
TEST_F(OpsBackends, Optimizers) { cases_.optimizers(); }

TEST_F(OpsBackends, Attention) {
  // Both of the CPU kernel's backward splits.
  cases_.attention({ops::AttnBwdSplit::ByKvHead, ops::AttnBwdSplit::TwoPass});
}

TEST_F(OpsBackends, PagedAttention) {
  // Both of the CPU kernel's paths.
  cases_.paged_attention({ops::PagedAttnPath::Direct, ops::PagedAttnPath::Gemm});
}

TEST_F(OpsBackends, AttentionMerge) { cases_.attention_merge(); }
TEST_F(OpsBackends, MoeRows) { cases_.moe_rows(); }
TEST_F(OpsBackends, GroupedLinears) { cases_.grouped_linears(); }
TEST_F(OpsBackends, Lowp) { cases_.lowp(); }
TEST_F(OpsBackends, GroupedLinearsLowp) { cases_.grouped_linears_lowp(); }

TEST_F(OpsBackends, Matmuls) {
  cases_.matmuls();
  // The skinny forms, which no device backend has (the CPU's decode path).
  const int64_t M = 5, K = 24, N = 16;
  auto a = rand(M * K), w = rand(N * K), c = rand(M * N);
  auto c2 = rand(M * 8), w2 = rand(8 * K);
  const ops::SkinnyPart ph[] = {{w.h(), N, K, c.h(), N}, {w2.h(), 8, K, c2.h(), 8}};
  const ops::SkinnyPart pdv[] = {{w.d(), N, K, c.d(), N}, {w2.d(), 8, K, c2.d(), 8}};
  ops::skinny_gemm_nt_parts(H, M, K, a.h(), K, ph, 2);
  ops::skinny_gemm_nt_parts(D, M, K, a.d(), K, pdv, 2);
  c.expect_same("skinny parts");
  c2.expect_same("skinny parts");
  for (ops::LowpType t : {ops::LowpType::BF16, ops::LowpType::F16}) {
    auto w16 = of<uint16_t>(std::vector<uint16_t>(N * K));
    ops::round_to_lowp(H, w16.h(), w.h(), N * K, t);
    ops::round_to_lowp(D, w16.d(), w.d(), N * K, t);
    ops::skinny_gemm_nt_lowp(H, M, N, K, 1.0f, a.h(), K, w16.h(), t, K, 0.0f, c.h(), N);
    ops::skinny_gemm_nt_lowp(D, M, N, K, 1.0f, a.d(), K, w16.d(), t, K, 0.0f, c.d(), N);
    c.expect_same("skinny_gemm_nt_lowp");
    const ops::SkinnyPart lh[] = {{w16.h(), N, K, c.h(), N}};
    const ops::SkinnyPart ld[] = {{w16.d(), N, K, c.d(), N}};
    ops::skinny_gemm_nt_parts_lowp(H, M, K, a.h(), K, lh, 1, t);
    ops::skinny_gemm_nt_parts_lowp(D, M, K, a.d(), K, ld, 1, t);
    c.expect_same("skinny_gemm_nt_parts_lowp");
  }
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
  auto w = rand(N * K), in = rand(M * K), out = rand(M * N), dout = rand(M * N), din = rand(M * K);
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
