// MoE layers in the FLOP count behind MFU: a token's matmuls are the
// router's and its top-k experts', so N grows by the router and (k - 1)
// MLPs per MoE layer over the dense model, whatever the number of experts.
#include <gtest/gtest.h>

#include "common/test_models.h"
#include "plan/flops.h"

namespace parallm {
namespace {

TEST(MoeFlops, CountsRouterAndTopkExperts) {
  const ModelConfig dense = testing::tiny_llama();  // 2 layers
  ModelConfig moe = dense;
  moe.moe.num_experts = 8;
  moe.moe.topk = 2;
  moe.moe.layer_freq = 2;  // layer 0 only
  const int64_t mlp = 3 * dense.hidden * dense.intermediate;
  EXPECT_EQ(block_matmul_parameters(moe), block_matmul_parameters(dense) + 8 * dense.hidden + mlp);
  moe.moe.num_experts = 64;  // more experts, same active work but the router
  EXPECT_EQ(block_matmul_parameters(moe), block_matmul_parameters(dense) + 64 * dense.hidden + mlp);
}

}  // namespace
}  // namespace parallm
