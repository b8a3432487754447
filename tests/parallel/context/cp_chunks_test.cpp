// Context-parallel chunking (cp_chunks.h): Megatron's load-balanced chunk
// order and global positions, the clear error for a sequence 2 x cp does
// not divide, the exact causal pair count, and the chunk attention core
// (chunk_attention.h) over every chunk pair against one full kernel call,
// also with packed documents (pairs wholly before the documents skipped),
// and the backward cut into parts (key chunk, batch entry, kv heads) giving
// the whole call bit for bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "base/error.h"
#include "parallel/context/chunk_attention.h"
#include "parallel/context/cp_chunks.h"

namespace parallm {
namespace {

TEST(CpChunks, LoadBalancedOrderAndPositions) {
  const CpChunks ch = cp_chunks(16, 4);
  EXPECT_EQ(ch.chunk_len(), 2);
  EXPECT_EQ(ch.chunks_of(0), (std::array<int, 2>{0, 7}));
  EXPECT_EQ(ch.chunks_of(3), (std::array<int, 2>{3, 4}));
  EXPECT_EQ(ch.positions_of(1), (std::vector<int64_t>{2, 3, 12, 13}));
  const std::vector<int32_t> full = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
  std::vector<int32_t> local(4);
  ch.take_local(full.data(), local.data(), 1, 1);
  EXPECT_EQ(local, (std::vector<int32_t>{2, 3, 12, 13}));
  const CpChunks flat = cp_chunks(16, 4, false);
  EXPECT_EQ(flat.positions_of(1), (std::vector<int64_t>{4, 5, 6, 7}));
}

TEST(CpChunks, SequenceNotDivisibleNamesValues) {
  try {
    check_cp_divides(18, 4);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("sequence length (18)"), std::string::npos) << m;
    EXPECT_NE(m.find("2 x cp (8)"), std::string::npos) << m;
  }
}

TEST(CpChunks, CausalPairs) {
  EXPECT_EQ(causal_pairs(0, 0, 4), 10);  // the diagonal block: n(n+1)/2
  EXPECT_EQ(causal_pairs(8, 0, 4), 16);  // a past block: all n^2
  EXPECT_EQ(causal_pairs(0, 8, 4), 0);   // a future block: none
}

// Normal samples from a fixed seed, k at a time.
struct Randn {
  explicit Randn(unsigned seed) : gen(seed) {}
  std::vector<float> operator()(int64_t k) {
    std::vector<float> v(static_cast<size_t>(k));
    for (float& x : v) x = dist(gen);
    return v;
  }
  std::mt19937 gen;
  std::normal_distribution<float> dist;
};

// doc_start: (B, 24) document starts, or empty (no document mask).
// Returns the pairs the chunk calls computed (causal count of each pair run).
int64_t expect_chunk_pairs_equal_one_call(const std::vector<int64_t>& doc_start) {
  Allocator host_;  // the tiles of the host stream
  const int64_t B = 2, T = 24, Hq = 4, Hkv = 2, D = 8, n = 6;
  Randn randn(5);
  auto q = randn(B * T * Hq * D), k = randn(B * T * Hkv * D), v = randn(B * T * Hkv * D),
       dout = randn(B * T * Hq * D);
  const double scale = 0.3;
  cpu::AttnDims full{.B = B, .Tq = T, .Tk = T, .Hq = Hq, .Hkv = Hkv, .D = D};
  if (!doc_start.empty()) {
    full.doc_start = doc_start.data();
    full.doc_ld = T;
  }
  std::vector<float> out(q.size()), lse(B * Hq * T), dq(q.size()), dk(k.size()), dv(v.size());
  cpu::attention_forward(out.data(), lse.data(), q.data(), k.data(), v.data(), full, scale);
  cpu::attention_backward(dq.data(), dk.data(), dv.data(), dout.data(), q.data(), k.data(),
                          v.data(), out.data(), lse.data(), full, scale);
  // The same sequence as 4 contiguous chunks; key chunks fed one at a time in reverse.
  const ChunkSet all{.pos0 = {0, 6, 12, 18}, .len = n};
  std::vector<float> o2(q.size()), l2(lse.size());
  chunk_attention_init(ops::Stream::host(), o2.data(), l2.data(), B, T, Hq, D);
  AttnWork work;
  for (int j = 3; j >= 0; --j) {
    const ChunkSet one{.pos0 = {all.pos0[j]}, .len = n};
    std::vector<float> kj, vj;
    for (int64_t b = 0; b < B; ++b) {
      auto from = (b * T + j * n) * Hkv * D, to = from + n * Hkv * D;
      kj.insert(kj.end(), k.begin() + from, k.begin() + to);
      vj.insert(vj.end(), v.begin() + from, v.begin() + to);
    }
    chunk_attention_forward(ops::Stream::host(), host_, o2.data(), l2.data(), q.data(), all,
                            kj.data(), vj.data(), one, full, scale, &work);
  }
  for (size_t i = 0; i < out.size(); ++i) EXPECT_NEAR(o2[i], out[i], 1e-5) << i;
  for (size_t i = 0; i < lse.size(); ++i) EXPECT_NEAR(l2[i], lse[i], 1e-5) << i;
  std::vector<float> dq2(q.size()), dk2(k.size()), dv2(v.size());
  chunk_attention_backward(ops::Stream::host(), host_, dq2.data(), dk2.data(), dv2.data(),
                           dout.data(), q.data(), all, k.data(), v.data(), all, out.data(),
                           lse.data(), full, scale);
  for (size_t i = 0; i < dq.size(); ++i) EXPECT_NEAR(dq2[i], dq[i], 1e-5 * (1 + std::abs(dq[i])));
  for (size_t i = 0; i < dk.size(); ++i) EXPECT_NEAR(dk2[i], dk[i], 1e-5 * (1 + std::abs(dk[i])));
  for (size_t i = 0; i < dv.size(); ++i) EXPECT_NEAR(dv2[i], dv[i], 1e-5 * (1 + std::abs(dv[i])));
  return work.pairs;
}

TEST(ChunkAttention, AllChunkPairsEqualOneKernelCall) {
  EXPECT_EQ(expect_chunk_pairs_equal_one_call({}), 2 * 4 * 24 * 25 / 2);
}

// Documents: row 0 cut at 5 and 13, row 1 at 14. For query chunk 3
// (18..23) every row's document starts at 13 or later, so key chunks 0
// (0..5) and 1 (6..11) are skipped; query chunk 2 (12..17) still needs key
// chunk 0 in row 1. The result still equals one masked kernel call.
TEST(ChunkAttention, DocumentMaskSkipsPairsBeforeTheDocuments) {
  std::vector<int64_t> starts;
  for (int64_t p = 0; p < 24; ++p) starts.push_back(p < 5 ? 0 : p < 13 ? 5 : 13);
  for (int64_t p = 0; p < 24; ++p) starts.push_back(p < 14 ? 0 : 14);
  const int64_t pairs = expect_chunk_pairs_equal_one_call(starts);
  // Skipped: (query chunk 3, key chunk 0) and (3, 1), 6 x 6 causal pairs each,
  // for 2 rows x 4 heads.
  EXPECT_EQ(pairs, 2 * 4 * (24 * 25 / 2 - 2 * 36));
}

// The ring's last step runs the backward in parts, one (key chunk, batch
// entry, kv head range) at a time, and sends each part's dK/dV home as
// soon as it is done; the parts must give the whole call's sums exactly.
void expect_parts_equal_the_whole_call(const cpu::AttnDims& base, int64_t heads_per_call) {
  Allocator host_;  // the tiles of the host stream
  const int64_t B = base.B, Hq = base.Hq, Hkv = base.Hkv, D = base.D, n = 5;
  const ChunkSet qs{.pos0 = {0, 15}, .len = n}, ks{.pos0 = {5, 10}, .len = n};
  const int64_t T = qs.tokens();
  Randn randn(11);
  auto q = randn(B * T * Hq * D), k = randn(B * T * Hkv * D), v = randn(B * T * Hkv * D),
       dout = randn(B * T * Hq * D);
  const double scale = 0.3;
  std::vector<float> out(q.size()), lse(B * Hq * T);
  chunk_attention_init(ops::Stream::host(), out.data(), lse.data(), B, T, Hq, D);
  chunk_attention_forward(ops::Stream::host(), host_, out.data(), lse.data(), q.data(), qs,
                          k.data(), v.data(), ks, base, scale);
  chunk_attention_forward(ops::Stream::host(), host_, out.data(), lse.data(), q.data(), qs,
                          k.data(), v.data(), qs, base, scale);
  // Start from nonzero gradients, as the ring's accumulators do.
  auto dq = randn(B * T * Hq * D), dk = randn(B * T * Hkv * D), dv = randn(B * T * Hkv * D);
  auto dq2 = dq, dk2 = dk, dv2 = dv;
  chunk_attention_backward(ops::Stream::host(), host_, dq.data(), dk.data(), dv.data(), dout.data(),
                           q.data(), qs, k.data(), v.data(), ks, out.data(), lse.data(), base,
                           scale);
  int calls = 0;
  for (int64_t j = 0; j < 2; ++j)
    for (int64_t b = 0; b < B; ++b)
      for (int64_t g = 0; g < Hkv; g += heads_per_call, ++calls)
        chunk_attention_backward(
            ops::Stream::host(), host_, dq2.data(), dk2.data(), dv2.data(), dout.data(), q.data(),
            qs, k.data(), v.data(), ks, out.data(), lse.data(), base, scale, {},
            AttnPart{j, j + 1, b, b + 1, g, std::min(Hkv, g + heads_per_call)});
  EXPECT_EQ(calls, 2 * B * ((Hkv + heads_per_call - 1) / heads_per_call));
  const auto same = [](const std::vector<float>& a, const std::vector<float>& b) {
    return std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
  };
  EXPECT_TRUE(same(dq, dq2));
  EXPECT_TRUE(same(dk, dk2));
  EXPECT_TRUE(same(dv, dv2));
}

TEST(ChunkAttention, PartsGiveTheWholeBackwardBitForBit) {
  const cpu::AttnDims base{.B = 2, .Tq = 0, .Tk = 0, .Hq = 6, .Hkv = 3, .D = 8};
  expect_parts_equal_the_whole_call(base, 1);
  expect_parts_equal_the_whole_call(base, 2);  // the last call takes one head
}

// Dropout keys on global (sample, head) and the document mask on each
// row's starts: a part must offset both to its batch entry and heads.
TEST(ChunkAttention, PartsKeepDropoutAndDocumentsInPlace) {
  std::vector<int64_t> starts;
  for (int64_t p = 0; p < 20; ++p) starts.push_back(p < 7 ? 0 : 7);
  for (int64_t p = 0; p < 20; ++p) starts.push_back(p < 12 ? 0 : 12);
  cpu::AttnDims base{.B = 2, .Tq = 0, .Tk = 0, .Hq = 4, .Hkv = 2, .D = 8};
  base.doc_start = starts.data();
  base.doc_ld = 20;
  base.dropout_p = 0.2;
  base.dropout_key = 99;
  base.head0 = 4;
  base.sample0 = 6;
  expect_parts_equal_the_whole_call(base, 1);
}

}  // namespace
}  // namespace parallm
