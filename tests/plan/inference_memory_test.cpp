// The inference memory model against hand-computed KV-cache sizes of
// published shapes: GPT-2 124M holds 36 KiB per token in 16 bits
// (2 x 12 layers x 12 heads x 64), LLaMA-2 7B 512 KiB (2 x 32 x 32 x 128 x 2),
// Llama-3 8B with 8 key/value groups 128 KiB; tp divides the heads (a group
// is replicated once tp exceeds the groups), pp the layers.
#include <gtest/gtest.h>

#include "base/error.h"
#include "model/model_catalog.h"
#include "plan/inference_memory.h"
#include "plan/memory_model.h"

namespace parallm {
namespace {

InferenceMemoryQuery query(const std::string& name, int tp = 1, int pp = 1) {
  InferenceMemoryQuery q;
  q.model = catalog_model(name);
  q.tp = tp;
  q.pp = pp;
  return q;
}

TEST(InferenceMemory, KvBytesPerTokenOfPublishedShapes) {
  EXPECT_EQ(estimate_inference_memory(query("gpt2-124m")).kv_bytes_per_token, 36864.0);
  EXPECT_EQ(estimate_inference_memory(query("llama2-7b")).kv_bytes_per_token, 524288.0);
  EXPECT_EQ(estimate_inference_memory(query("llama3-8b")).kv_bytes_per_token, 131072.0);
  InferenceMemoryQuery fp32 = query("gpt2-124m");
  fp32.kv_cache = Precision::FP32;
  EXPECT_EQ(estimate_inference_memory(fp32).kv_bytes_per_token, 2 * 36864.0);
}

TEST(InferenceMemory, TpSplitsHeadsAndPpSplitsLayers) {
  EXPECT_EQ(estimate_inference_memory(query("llama3-8b", 2)).kv_bytes_per_token, 65536.0);
  EXPECT_EQ(estimate_inference_memory(query("llama3-8b", 1, 4)).kv_bytes_per_token, 32768.0);
  // 8 groups over tp 16: each rank still holds one whole group.
  const InferenceMemory r = estimate_inference_memory(query("llama3-8b", 16));
  EXPECT_EQ(r.kv_heads_per_rank, 1);
  EXPECT_EQ(r.kv_bytes_per_token, 2.0 * 32 * 1 * 128 * 2);
}

TEST(InferenceMemory, WeightsAreTheTrainingModelsCountWithoutState) {
  InferenceMemoryQuery q = query("llama2-7b", 2, 2);
  MemoryQuery t;
  t.model = q.model;
  t.tp = 2;
  t.pp = 2;
  const InferenceMemory r = estimate_inference_memory(q);
  EXPECT_EQ(r.params_per_rank, estimate_memory(t).params_per_rank);
  EXPECT_EQ(r.weights, 2.0 * r.params_per_rank);  // bf16
  EXPECT_EQ(r.kv_cache, r.kv_bytes_per_token * q.model.max_positions);  // batch 1, full context
}

TEST(InferenceMemory, LargestCacheFillsWhatTheWeightsLeave) {
  InferenceMemoryQuery q = query("llama2-7b");
  const InferenceMemory r = estimate_inference_memory(q);
  const double device = r.weights + 1000.5 * r.kv_bytes_per_token;
  EXPECT_EQ(max_cached_tokens(q, device), 1000);
  EXPECT_EQ(max_cached_tokens(q, r.weights / 2), 0);
}

TEST(InferenceMemory, RefusesBadQueriesNamingTheValues) {
  InferenceMemoryQuery q = query("gpt2-124m");
  q.context = 4096;
  EXPECT_THROW(
      {
        try {
          estimate_inference_memory(q);
        } catch (const Error& e) {
          EXPECT_NE(std::string(e.what()).find("context (4096)"), std::string::npos) << e.what();
          throw;
        }
      },
      Error);
  q = query("gpt2-124m", 5);
  EXPECT_THROW(estimate_inference_memory(q), Error);
  q = query("gpt2-124m");
  q.batch = 0;
  EXPECT_THROW(estimate_inference_memory(q), Error);
}

}  // namespace
}  // namespace parallm
