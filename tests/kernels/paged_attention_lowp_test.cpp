// Tests of paged attention over 16-bit pools (kernels/cpu/paged_attention.h):
// the bf16 / f16 write stores round_to_lowp's bits, and the forward over
// 16-bit pools equals, bit for bit, the f32 forward over pools holding the
// same values widened (the widening is exact and everything after it is the
// f32 code), on both paths, GQA, decode and prefill, block sizes 1, 3 and 16,
// head dims that do and do not fill a vector, sliding windows. Unused pool
// entries are NaN in both pools, so a stray read shows.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <vector>

#include "base/rng.h"
#include "kernels/cpu/gemm_bf16.h"
#include "kernels/cpu/paged_attention.h"

namespace parallm::cpu {
namespace {

struct Dims {
  int64_t Hq, Hkv, D, block_size, past, Tq, window = 0;
};

std::vector<float> random_vec(int64_t n, uint64_t seed, std::string_view name) {
  const uint64_t key = stream_key(seed, name);
  std::vector<float> x(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) x[i] = static_cast<float>(normal_at(key, static_cast<uint64_t>(i)));
  return x;
}

// One sequence's keys and values in a 16-bit pool and an f32 pool of the
// same shuffled blocks; every entry no position writes is NaN.
struct LowpCase {
  LowpCase(const Dims& d, LowpType t, uint64_t seed) : s(d), type(t) {
    const int64_t Tk = d.past + d.Tq, row = d.Hkv * d.D;
    const int64_t n = (Tk + d.block_size - 1) / d.block_size;
    num_blocks = n + 2;
    std::vector<int32_t> ids(static_cast<size_t>(num_blocks));
    std::iota(ids.begin(), ids.end(), 0);
    for (int64_t i = num_blocks - 1; i > 0; --i)
      std::swap(ids[i], ids[static_cast<int64_t>(uniform_at(seed, i) * (i + 1))]);
    table.assign(ids.begin(), ids.begin() + n);
    q = random_vec(d.Tq * d.Hq * d.D, seed, "q");
    const size_t pool = static_cast<size_t>(num_blocks * d.block_size * row);
    const uint16_t nan16 = t == LowpType::BF16 ? 0x7fc0 : 0x7e00;
    for (const char* name : {"k", "v"}) {
      const std::vector<float> rows = random_vec(Tk * row, seed, name);
      std::vector<uint16_t> p16(pool, nan16);
      paged_kv_write(p16.data(), t, num_blocks, d.block_size, row, table.data(), n, 0, Tk,
                     rows.data());
      std::vector<float> p32(pool);
      widen_lowp(p32.data(), p16.data(), static_cast<int64_t>(pool), t);
      lowp.push_back(std::move(p16));
      wide.push_back(std::move(p32));
      src.push_back(rows);
    }
  }
  PagedAttnDims dims() const { return {s.Hq, s.Hkv, s.D, s.block_size, num_blocks, s.window}; }
  PagedSeq seq() const { return {s.Tq, s.past, table.data(), static_cast<int64_t>(table.size())}; }
  double scale() const { return 1.0 / std::sqrt(static_cast<double>(s.D)); }

  Dims s;
  LowpType type;
  int64_t num_blocks = 0;
  std::vector<int32_t> table;
  std::vector<float> q;
  std::vector<std::vector<uint16_t>> lowp;  // k, v
  std::vector<std::vector<float>> wide;     // k, v widened
  std::vector<std::vector<float>> src;      // k, v rows as written
};

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

const std::vector<Dims> kShapes = {
    {4, 4, 16, 16, 0, 1},         // first token
    {8, 2, 32, 16, 37, 1},        // GQA decode
    {8, 2, 64, 16, 300, 1},       // decode over several key tiles
    {8, 2, 32, 16, 35, 13},       // prefill chunk after a past
    {6, 3, 12, 1, 20, 5},         // block size 1, D not a multiple of 8
    {4, 1, 64, 16, 0, 70},        // more rows than one query block, MQA
    {4, 2, 20, 3, 100, 9},        // block size not dividing the tile
    {8, 2, 32, 16, 300, 1, 150},  // sliding window across tiles
    {2, 2, 8, 16, 140, 130, 100},
};

class PagedAttentionLowp : public ::testing::TestWithParam<std::tuple<Dims, LowpType>> {};

TEST_P(PagedAttentionLowp, WriteRoundsAndForwardEqualsF32OverWidenedPools) {
  const auto [d, t] = GetParam();
  const LowpCase c(d, t, 5);
  // The stored bits are round_to_lowp's of the rows.
  const int64_t row = d.Hkv * d.D;
  for (int kv = 0; kv < 2; ++kv)
    for (int64_t pos = 0; pos < d.past + d.Tq; ++pos) {
      std::vector<uint16_t> want(static_cast<size_t>(row));
      round_to_lowp(want.data(), &c.src[kv][pos * row], row, t);
      const int64_t phys = c.table[pos / d.block_size];
      ASSERT_EQ(0, std::memcmp(&c.lowp[kv][(phys * d.block_size + pos % d.block_size) * row],
                               want.data(), want.size() * 2))
          << "kv " << kv << " position " << pos;
    }
  const PagedSeq seq = c.seq();
  for (PagedAttnPath path : {PagedAttnPath::Auto, PagedAttnPath::Direct, PagedAttnPath::Gemm}) {
    SCOPED_TRACE(static_cast<int>(path));
    std::vector<float> out16(c.q.size()), lse16(static_cast<size_t>(d.Tq * d.Hq));
    std::vector<float> out32(out16.size()), lse32(lse16.size());
    paged_attention_forward(out16.data(), lse16.data(), c.q.data(), c.lowp[0].data(),
                            c.lowp[1].data(), t, &seq, 1, c.dims(), c.scale(), path);
    paged_attention_forward<float>(out32.data(), lse32.data(), c.q.data(), c.wide[0].data(),
                                   c.wide[1].data(), &seq, 1, c.dims(), c.scale(), path);
    EXPECT_TRUE(same_bits(out16, out32));
    EXPECT_TRUE(same_bits(lse16, lse32));
    for (float x : out16) ASSERT_TRUE(std::isfinite(x));
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, PagedAttentionLowp,
                         ::testing::Combine(::testing::ValuesIn(kShapes),
                                            ::testing::Values(LowpType::BF16, LowpType::F16)));

}  // namespace
}  // namespace parallm::cpu
