// The routed experts' own width (MoeConfig::ffn_hidden_size) in the FLOP
// count: Qwen1.5-MoE-A2.7B's active matmul parameters, which with the
// embedding, biases and norms added are the published 2.7B activated
// parameters (2,689,173,504 by hand: 24 layers of attention 4 x 2048^2,
// router 60 x 2048, four experts 4 x 3 x 2048 x 1408, shared expert
// 3 x 2048 x 5632 and its gate 2048; the head and the embedding 151936 x 2048).
#include <gtest/gtest.h>

#include "model/model_catalog.h"
#include "plan/flops.h"

namespace parallm {
namespace {

TEST(MoeFlops, CountsTheExpertsOwnWidth) {
  const ModelConfig c = catalog_model("qwen1.5-moe-a2.7b");
  EXPECT_EQ(block_matmul_parameters(c), 2066595840);
  const int64_t embedding = c.vocab_size * c.hidden;
  const int64_t qkv_bias_and_norms = c.n_layers * (3 * 2048 + 2 * 2048) + 2048;
  EXPECT_EQ(matmul_parameters(c) + embedding + qkv_bias_and_norms, 2689173504);
  // Experts as wide as the dense MLP again: 4 x 3 x 2048 x (5632 - 1408) more per layer.
  ModelConfig wide = c;
  wide.moe.ffn_hidden_size = 0;
  EXPECT_EQ(block_matmul_parameters(wide) - block_matmul_parameters(c),
            int64_t{24} * 4 * 3 * 2048 * (5632 - 1408));
}

}  // namespace
}  // namespace parallm
