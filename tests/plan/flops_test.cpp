// FLOP formulas (PaLM appendix B): GPT-2 124M at T = 1024 against the numbers
// worked out by hand, and HFU's recomputation terms.
#include "plan/flops.h"

#include <gtest/gtest.h>

#include "model/model_catalog.h"

namespace parallm {
namespace {

ModelConfig gpt2_124m() {
  ModelConfig c;  // L 12, C 768, H 12, Q 64, I 3072, V 50257
  c.vocab_size = 50257;
  c.hidden = 768;
  c.n_layers = 12;
  c.n_heads = c.n_kv_heads = 12;
  c.head_dim = 64;
  c.intermediate = 3072;
  c.max_positions = 1024;
  return c;
}

TEST(Flops, Gpt2SmallByHand) {
  const ModelConfig c = gpt2_124m();
  // Per block 4C^2 (q, k, v, o) + 2CI = 2,359,296 + 4,718,592 = 7,077,888; x 12 =
  // 84,934,656; + LM head VC = 38,597,376 -> N = 123,532,032.
  EXPECT_EQ(block_matmul_parameters(c), 84934656);
  EXPECT_EQ(matmul_parameters(c), 123532032);
  // 6N = 741,192,192; 12LHQT = 12*12*12*64*1024 = 113,246,208.
  EXPECT_DOUBLE_EQ(training_flops_per_token(c, 1024), 854438400.0);
  EXPECT_DOUBLE_EQ(hardware_flops_per_token(c, 1024, Recompute::None), 854438400.0);
  // Selective: + 4LHQT = 37,748,736. Full: + 2 N_blocks + 4LHQT = 207,618,048.
  EXPECT_DOUBLE_EQ(recompute_flops_per_token(c, 1024, Recompute::Selective), 37748736.0);
  EXPECT_DOUBLE_EQ(recompute_flops_per_token(c, 1024, Recompute::Full), 207618048.0);
  EXPECT_DOUBLE_EQ(hardware_flops_per_token(c, 1024, Recompute::Full), 854438400.0 + 207618048.0);
}

TEST(Flops, LoraSkipsTheFrozenWeightGradients) {
  ModelConfig c = gpt2_124m();
  c.lora.rank = 8;
  c.lora.targets = {"q", "v"};
  // r (in + out) = 8 (768 + 768) per adapted linear, two per block, 12 blocks.
  EXPECT_EQ(lora_matmul_parameters(c), 294912);
  // 4N + 6 N_adapters + 12LHQT = 494,128,128 + 1,769,472 + 113,246,208.
  EXPECT_DOUBLE_EQ(training_flops_per_token(c, 1024), 609143808.0);
  // Full recomputation reruns the adapters with the blocks: + 2 x 294,912.
  EXPECT_DOUBLE_EQ(recompute_flops_per_token(c, 1024, Recompute::Full), 207618048.0 + 589824.0);
  // GPT-2's fc / proj are the memory model's up / down: all-linear and the
  // explicit list count the same adapters, 8 (4 (768 + 768) + 2 (768 + 3072)) x 12.
  c.lora.targets = {"q", "k", "v", "o", "fc", "proj"};
  EXPECT_EQ(lora_matmul_parameters(c), 1327104);
  c.lora.targets = {"all-linear"};
  EXPECT_EQ(lora_matmul_parameters(c), 1327104);
  c.lora.rank = 0;
  EXPECT_EQ(lora_matmul_parameters(c), 0);
}

TEST(Flops, CatalogGpt2AndSwiGluCount) {
  EXPECT_EQ(matmul_parameters(catalog_model("gpt2-124m")), matmul_parameters(gpt2_124m()));
  ModelConfig l = gpt2_124m();
  l.arch = Arch::LLaMA;
  l.n_kv_heads = 4;  // GQA: k and v are C x (4 * 64) each
  const int64_t per = 768 * 768 * 2 + 2 * 768 * 256 + 3 * 768 * 3072;
  EXPECT_EQ(block_matmul_parameters(l), 12 * per);
}

TEST(Flops, UtilisationDividesByPeakAndRanks) {
  // 1000 tok/s x 1e9 FLOP/token on 2 ranks of 1 TFLOP/s = 50%.
  EXPECT_DOUBLE_EQ(flops_utilisation(1000, 1e9, 1e12, 2), 0.5);
  EXPECT_DOUBLE_EQ(flops_utilisation(1000, 1e9, 0, 2), 0.0);  // unknown peak
  const ModelConfig c = gpt2_124m();
  const double mfu = flops_utilisation(1e4, training_flops_per_token(c, 1024), 1e14, 1);
  const double hfu =
      flops_utilisation(1e4, hardware_flops_per_token(c, 1024, Recompute::Full), 1e14, 1);
  EXPECT_GT(hfu, mfu);
  EXPECT_DOUBLE_EQ(hfu / mfu, (854438400.0 + 207618048.0) / 854438400.0);
}

}  // namespace
}  // namespace parallm
