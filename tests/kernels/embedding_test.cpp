// Embedding tests: lookup, vocab-shard semantics (outside tokens give zeros
// and no gradient; shards sum to the full lookup), finite differences and
// accumulation for the backward, and thread-count independence.
#include "kernels/cpu/embedding.h"

#include <gtest/gtest.h>

#include "finite_diff.h"

namespace parallm::cpu {
namespace {

using test::randn;

constexpr int64_t V = 11, C = 13, N = 7;
const std::vector<int32_t> kTok = {3, 10, 0, 3, 6, 5, 3};  // repeats on purpose

TEST(Embedding, ForwardLooksUpRows) {
  auto table = randn(V * C, 1, "table");
  std::vector<double> out(N * C, 7.0);
  embedding_forward(out.data(), kTok.data(), table.data(), N, C, 0, V, false);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t j = 0; j < C; ++j) EXPECT_EQ(out[n * C + j], table[kTok[n] * C + j]);
}

TEST(Embedding, ShardsSumToFullLookup) {
  auto table = randn(V * C, 2, "table");
  std::vector<double> full(N * C);
  embedding_forward(full.data(), kTok.data(), table.data(), N, C, 0, V, false);
  // Shard A holds rows [0, 5), shard B rows [5, 11).
  const int64_t split = 5;
  std::vector<double> out(N * C, 42.0);
  embedding_forward(out.data(), kTok.data(), table.data(), N, C, 0, split, false);
  for (int64_t n = 0; n < N; ++n) {
    if (kTok[n] < split) continue;
    for (int64_t j = 0; j < C; ++j) EXPECT_EQ(out[n * C + j], 0.0) << "outside shard";
  }
  embedding_forward(out.data(), kTok.data(), table.data() + split * C, N, C, split, V - split,
                    true);
  EXPECT_EQ(out, full);
}

TEST(Embedding, BackwardShardsAndFiniteDifferences) {
  auto table = randn(V * C, 3, "table"), r = randn(N * C, 3, "r");
  std::vector<double> out(N * C);
  auto loss = [&] {
    embedding_forward(out.data(), kTok.data(), table.data(), N, C, 0, V, false);
    return test::dot(out, r);
  };
  std::vector<double> dtable(V * C, 0.0);
  embedding_backward(dtable.data(), kTok.data(), r.data(), N, C, 0, V);
  test::expect_grad_matches(loss, table, dtable, "dtable");

  // Shard [4, 9): its rows equal the full gradient's, others never touched.
  const int64_t b = 4, rows = 5;
  std::vector<double> shard(rows * C, 1.0);
  embedding_backward(shard.data(), kTok.data(), r.data(), N, C, b, rows);
  for (int64_t i = 0; i < rows * C; ++i) EXPECT_NEAR(shard[i], dtable[b * C + i] + 1.0, 1e-15);
}

TEST(Embedding, BackwardIndependentOfThreadCount) {
  const int64_t n = 517, c = 300, v = 37;
  std::vector<int32_t> tok(n);
  for (int64_t i = 0; i < n; ++i) tok[i] = static_cast<int32_t>((i * 7919) % v);
  auto d = randn<float>(n * c, 4, "d");
  std::vector<float> a(v * c, 0.0f), b(v * c, 0.0f);
  test::with_threads(1, [&] { embedding_backward(a.data(), tok.data(), d.data(), n, c, 0, v); });
  test::with_threads(3, [&] { embedding_backward(b.data(), tok.data(), d.data(), n, c, 0, v); });
  EXPECT_EQ(a, b);
}

}  // namespace
}  // namespace parallm::cpu
