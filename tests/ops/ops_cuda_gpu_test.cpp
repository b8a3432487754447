// The CUDA backend of the op interface (ops/cuda) against the host stream:
// every op a device backend has (common/ops_backend_cases.h, _rows.h) on the
// GPU's stream, within 1e-4 * (1 + |host value|): fp32 kernels with TF32 off
// (16-bit GEMMs: exact products, f32 sums), the sums in other orders over at
// most a few hundred terms (|error| ~ n * 2^-24 * the terms' magnitude, ~1e-5
// here); rounding to bf16 / f16 bit for bit. Then an op the backend lacks is
// a clear error naming it, and memory of a GPU allocator finds its stream.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "common/gpu_test.h"
#include "common/ops_backend_cases.h"
#include "ops/cuda/cuda_device.h"

namespace parallm {
namespace {

class OpsCuda : public testing::GpuTest {
 protected:
  ops::CudaDevice& gpu() {
    if (!gpu_) gpu_ = std::make_unique<ops::CudaDevice>(0, false);
    return *gpu_;
  }
  backend_cases::Cases& cases() {
    if (!alloc_) alloc_ = std::make_unique<Allocator>(gpu());
    if (!cases_) cases_ = std::make_unique<backend_cases::Cases>(gpu().stream(), *alloc_, 1e-4);
    return *cases_;
  }
  std::unique_ptr<ops::CudaDevice> gpu_;
  std::unique_ptr<Allocator> alloc_;
  std::unique_ptr<backend_cases::Cases> cases_;
};

TEST_F(OpsCuda, Activations) { cases().activations(); }
TEST_F(OpsCuda, Norms) { cases().norms(); }
TEST_F(OpsCuda, RopeEmbeddingLoss) { cases().rope_embedding_loss(); }
TEST_F(OpsCuda, Optimizers) { cases().optimizers(); }
TEST_F(OpsCuda, Attention) { cases().attention(); }
TEST_F(OpsCuda, Matmuls) { cases().matmuls(); }
TEST_F(OpsCuda, PagedAttention) { cases().paged_attention(); }  // the GPU's one path
TEST_F(OpsCuda, AttentionMerge) { cases().attention_merge(); }
TEST_F(OpsCuda, MoeRows) { cases().moe_rows(); }
TEST_F(OpsCuda, GroupedLinears) { cases().grouped_linears(); }
TEST_F(OpsCuda, Lowp) { cases().lowp(); }
TEST_F(OpsCuda, GroupedLinearsLowp) { cases().grouped_linears_lowp(); }

TEST_F(OpsCuda, TheStreamOfItsMemoryAndAMissingOp) {
  Allocator a(gpu());
  EXPECT_EQ(&ops::Stream::of(a), &gpu().stream());
  Tensor t = Tensor::zeros(a, {4}, DType::F32, MemTag::Workspace);
  EXPECT_EQ(&ops::Stream::of(t), &gpu().stream());
  try {  // the CPU's skinny decode GEMM: no backend has it
    ops::skinny_gemm_nt_parts(gpu().stream(), 1, 4, t.data<float>(), 4, nullptr, 0);
    FAIL() << "skinny_gemm_nt_parts ran on the GPU, which has no kernel for it";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("op skinny_gemm_nt_parts has no cuda kernel yet"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace parallm
