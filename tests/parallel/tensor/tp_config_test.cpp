// Tensor-parallel checks that need no second process: vocabulary shards and
// padding, the divisibility errors (named with their numbers), and that a
// model built with an inactive tp group is the plain one-process model.
#include <gtest/gtest.h>

#include "common/test_models.h"
#include "common/test_util.h"
#include "model/transformer.h"
#include "parallel/tensor/vocab_shard.h"

namespace parallm {
namespace {

TEST(VocabShard, PadsToAMultipleOfTpAndMarksValidRows) {
  VocabShard a = VocabShard::of(1003, 4, 3);
  EXPECT_EQ(a.padded, 1004);
  EXPECT_EQ(a.rows, 251);
  EXPECT_EQ(a.begin, 753);
  EXPECT_EQ(a.valid, 250);                 // the last row is padding
  VocabShard b = VocabShard::of(5, 4, 3);  // a rank may hold only padding
  EXPECT_EQ(b.padded, 8);
  EXPECT_EQ(b.valid, 0);
  VocabShard one = VocabShard::of(1003, 1, 0);
  EXPECT_EQ(one.padded, 1003);
  EXPECT_EQ(one.valid, 1003);
}

TEST(TensorParallelConfig, DivisibilityErrorsNameTheNumbers) {
  ModelConfig c = testing::tiny_gpt2();  // 3 heads
  EXPECT_EQ(testing::error_of([&] { check_tp_divides(c, 2); }),
            "num_attention_heads (3) is not divisible by tp (2)");
  ModelConfig l = testing::tiny_llama();  // 6 heads, 2 key/value groups
  EXPECT_NE(testing::error_of([&] {
              check_tp_divides(l, 3);
            }).find("num_key_value_heads (2) and tp (3): one must divide the other"),
            std::string::npos);
  // Fewer key/value groups than ranks: replicated, tp / n_kv ranks per group.
  l.n_kv_heads = 1;
  EXPECT_EQ(testing::error_of([&] { check_tp_divides(l, 2); }), "(no error)");
  EXPECT_EQ(kv_replicas(l, 2), 2);
  EXPECT_EQ(kv_replicas(l, 1), 1);
  l.n_kv_heads = 6;
  l.intermediate = 200;
  EXPECT_EQ(testing::error_of([&] { check_tp_divides(l, 3); }),
            "intermediate_size (200) is not divisible by tp (3)");
}

TEST(TensorParallelConfig, InactiveGroupGivesUnshardedParameters) {
  Allocator a;
  Transformer m(testing::tiny_llama(), a, TpGroup{});
  for (int i = 0; i < m.params().size(); ++i) {
    EXPECT_EQ(m.params().spec(i).shard_dim, -1) << m.params().spec(i).name;
    EXPECT_FALSE(m.params().spec(i).tp_partial_grad) << m.params().spec(i).name;
  }
}

}  // namespace
}  // namespace parallm
