// Tests of paged attention (kernels/cpu/paged_attention.h): keys and values
// scattered over shuffled blocks of a pool whose other entries are NaN (so a
// read outside a sequence's keys shows), compared with cpu::attention_forward
// on the same data laid out contiguously and with a double reference that
// materialises the scores; both the Direct and the Gemm path, GQA, decode and
// prefill chunks with a past, block sizes 1, 3 and 16, sliding windows (the
// NaN entries then include blocks wholly before the window); a ragged batch
// equals each sequence alone, and Direct rows any chunking and either
// thread count, bit for bit.
#include "kernels/cpu/paged_attention.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "base/error.h"
#include "base/rng.h"
#include "kernels/cpu/attention.h"

namespace parallm::cpu {
namespace {

struct Dims {
  int64_t Hq, Hkv, D, block_size, past, Tq;
  int64_t window = 0;  // sliding window; 0: none
};

std::vector<double> random_vec(int64_t n, uint64_t seed, std::string_view name) {
  const uint64_t key = stream_key(seed, name);
  std::vector<double> x(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) x[i] = normal_at(key, static_cast<uint64_t>(i));
  return x;
}

template <class T>
std::vector<T> cast(const std::vector<double>& x) {
  return std::vector<T>(x.begin(), x.end());
}

// One sequence: contiguous q (Tq, Hq, D), k and v (Tk, Hkv, D), and a block
// table into a pool with spare blocks, shuffled so logical order != physical.
struct Case {
  Case(const Dims& sh, uint64_t seed, int64_t spare_blocks = 3)
      : s(sh),
        Tk(sh.past + sh.Tq),
        q(random_vec(sh.Tq * sh.Hq * sh.D, seed, "q")),
        k(random_vec(Tk * sh.Hkv * sh.D, seed, "k")),
        v(random_vec(Tk * sh.Hkv * sh.D, seed, "v")) {
    const int64_t n = (Tk + s.block_size - 1) / s.block_size;
    num_blocks = n + spare_blocks;
    std::vector<int32_t> ids(static_cast<size_t>(num_blocks));
    std::iota(ids.begin(), ids.end(), 0);
    // A fixed permutation from the seed (no std::shuffle: its order is unspecified).
    for (int64_t i = num_blocks - 1; i > 0; --i)
      std::swap(ids[i], ids[static_cast<int64_t>(uniform_at(seed, i) * (i + 1))]);
    table.assign(ids.begin(), ids.begin() + n);
  }
  PagedAttnDims dims() const { return {s.Hq, s.Hkv, s.D, s.block_size, num_blocks, s.window}; }
  template <class T>
  std::vector<T> pool(const std::vector<double>& rows) const {
    const int64_t row = s.Hkv * s.D;
    std::vector<T> p(static_cast<size_t>(num_blocks * s.block_size * row),
                     std::numeric_limits<T>::quiet_NaN());
    const std::vector<T> src = cast<T>(rows);
    paged_kv_write(p.data(), num_blocks, s.block_size, row, table.data(),
                   static_cast<int64_t>(table.size()), 0, Tk, src.data());
    // Blocks wholly before the first query's window must not be read: NaN.
    const int64_t first = s.window > 0 ? std::max<int64_t>(0, s.past - s.window + 1) : 0;
    for (int64_t b = 0; b < first / s.block_size; ++b)
      std::fill_n(p.begin() + table[b] * s.block_size * row, s.block_size * row,
                  std::numeric_limits<T>::quiet_NaN());
    return p;
  }
  PagedSeq seq() const { return {s.Tq, s.past, table.data(), static_cast<int64_t>(table.size())}; }
  double scale() const { return 1.0 / std::sqrt(static_cast<double>(s.D)); }

  Dims s;
  int64_t Tk, num_blocks = 0;
  std::vector<double> q, k, v;
  std::vector<int32_t> table;
};

template <class T>
struct Result {
  std::vector<T> out, lse;  // lse (Tq, Hq)
};

template <class T>
Result<T> run_paged(const Case& c, PagedAttnPath path) {
  const std::vector<T> q = cast<T>(c.q), kp = c.pool<T>(c.k), vp = c.pool<T>(c.v);
  Result<T> r{std::vector<T>(c.q.size()), std::vector<T>(static_cast<size_t>(c.s.Tq * c.s.Hq))};
  const PagedSeq seq = c.seq();
  paged_attention_forward(r.out.data(), r.lse.data(), q.data(), kp.data(), vp.data(), &seq, 1,
                          c.dims(), c.scale(), path);
  return r;
}

// cpu::attention_forward on the contiguous data; lse transposed to (Tq, Hq).
Result<float> run_contiguous(const Case& c) {
  const std::vector<float> q = cast<float>(c.q), k = cast<float>(c.k), v = cast<float>(c.v);
  const AttnDims d{.B = 1,
                   .Tq = c.s.Tq,
                   .Tk = c.Tk,
                   .Hq = c.s.Hq,
                   .Hkv = c.s.Hkv,
                   .D = c.s.D,
                   .q_pos0 = c.s.past,
                   .k_pos0 = 0,
                   .window = c.s.window};
  std::vector<float> lse(static_cast<size_t>(c.s.Hq * c.s.Tq));
  Result<float> r{std::vector<float>(c.q.size()), std::vector<float>(lse.size())};
  attention_forward(r.out.data(), lse.data(), q.data(), k.data(), v.data(), d, c.scale());
  for (int64_t h = 0; h < c.s.Hq; ++h)
    for (int64_t i = 0; i < c.s.Tq; ++i) r.lse[i * c.s.Hq + h] = lse[h * c.s.Tq + i];
  return r;
}

// Materialised scores in double: query i at position past + i sees keys 0
// (or past + i - window + 1) .. past + i.
Result<double> reference(const Case& c) {
  const Dims& s = c.s;
  const int64_t group = s.Hq / s.Hkv;
  Result<double> r{std::vector<double>(c.q.size()),
                   std::vector<double>(static_cast<size_t>(s.Tq * s.Hq))};
  for (int64_t i = 0; i < s.Tq; ++i)
    for (int64_t h = 0; h < s.Hq; ++h) {
      const int64_t g = h / group, n = s.past + i + 1;
      const int64_t j0 = s.window > 0 ? std::max<int64_t>(0, n - s.window) : 0;
      std::vector<double> p(static_cast<size_t>(n), -std::numeric_limits<double>::infinity());
      for (int64_t j = j0; j < n; ++j) {
        double dot = 0.0;
        for (int64_t e = 0; e < s.D; ++e)
          dot += c.q[(i * s.Hq + h) * s.D + e] * c.k[(j * s.Hkv + g) * s.D + e];
        p[j] = dot * c.scale();
      }
      const double m = *std::max_element(p.begin(), p.end());
      double sum = 0.0;
      for (double& x : p) sum += (x = std::exp(x - m));
      for (int64_t e = 0; e < s.D; ++e) {
        double o = 0.0;
        for (int64_t j = 0; j < n; ++j) o += p[j] * c.v[(j * s.Hkv + g) * s.D + e];
        r.out[(i * s.Hq + h) * s.D + e] = o / sum;
      }
      r.lse[i * s.Hq + h] = m + std::log(sum);
    }
  return r;
}

template <class A, class B>
double max_rel_err(const std::vector<A>& got, const std::vector<B>& want) {
  EXPECT_EQ(got.size(), want.size());
  double worst = 0.0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double g = static_cast<double>(got[i]), w = static_cast<double>(want[i]);
    if (!std::isfinite(g)) return std::numeric_limits<double>::infinity();
    worst = std::max(worst, std::abs(g - w) / std::max(1.0, std::abs(w)));
  }
  return worst;
}

const std::vector<Dims> kShapes = {
    {4, 4, 16, 16, 0, 1},     // first token
    {8, 2, 32, 16, 37, 1},    // GQA decode
    {8, 2, 32, 16, 300, 1},   // decode over several key tiles
    {8, 2, 32, 16, 35, 13},   // prefill chunk after a past, crossing blocks
    {6, 3, 8, 1, 20, 5},      // block size 1
    {4, 1, 64, 16, 0, 70},    // more rows than one query block, MQA
    {4, 2, 16, 3, 100, 9},    // block size not dividing the tile
    {4, 2, 16, 16, 32, 16},   // past and chunk on block boundaries
    {2, 2, 8, 16, 140, 130},  // chunk spanning key tiles and query blocks
    // Sliding windows: decode with the window inside one tile and across
    // tiles and blocks, of 1, wider than the sequence; prefill chunks.
    {8, 2, 32, 16, 37, 1, 5},
    {8, 2, 32, 16, 300, 1, 150},
    {8, 2, 32, 16, 300, 1, 1},
    {6, 3, 8, 1, 20, 5, 7},
    {4, 2, 16, 3, 100, 9, 10},
    {8, 2, 32, 16, 35, 13, 40},
    {4, 1, 64, 16, 0, 70, 17},
    {2, 2, 8, 16, 140, 130, 100},
    {2, 2, 8, 16, 140, 130, 300},
};

class PagedAttentionShapes : public ::testing::TestWithParam<Dims> {};

TEST_P(PagedAttentionShapes, MatchesContiguousAndDoubleReference) {
  const Case c(GetParam(), 11);
  const Result<float> want = run_contiguous(c);
  const Result<double> ref = reference(c);
  for (PagedAttnPath path : {PagedAttnPath::Auto, PagedAttnPath::Direct, PagedAttnPath::Gemm}) {
    SCOPED_TRACE(static_cast<int>(path));
    const Result<float> got = run_paged<float>(c, path);
    EXPECT_LT(max_rel_err(got.out, want.out), 1e-6);
    EXPECT_LT(max_rel_err(got.lse, want.lse), 1e-6);
    EXPECT_LT(max_rel_err(got.out, ref.out), 1e-6);
    EXPECT_LT(max_rel_err(got.lse, ref.lse), 1e-6);
    const Result<double> got64 = run_paged<double>(c, path);
    EXPECT_LT(max_rel_err(got64.out, ref.out), 1e-12);
    EXPECT_LT(max_rel_err(got64.lse, ref.lse), 1e-12);
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, PagedAttentionShapes, ::testing::ValuesIn(kShapes));

// Several sequences of one pool in one call: every row equals the sequence
// computed alone (the result never depends on the rest of the batch).
TEST(PagedAttention, RaggedBatchEqualsEachSequenceAlone) {
  const int64_t Hq = 8, Hkv = 2, D = 32, bs = 16;
  const std::vector<std::pair<int64_t, int64_t>> seqs = {{40, 1}, {0, 23}, {17, 1}, {5, 9}};
  // One pool for all: sequence i owns blocks i, i + 4, i + 8, ... (interleaved).
  const int64_t per_seq = 4, nseq = static_cast<int64_t>(seqs.size());
  const int64_t num_blocks = per_seq * nseq, row = Hkv * D;
  std::vector<float> kp(static_cast<size_t>(num_blocks * bs * row), NAN), vp = kp;
  std::vector<std::vector<int32_t>> tables;
  std::vector<float> q_all;
  std::vector<PagedSeq> ps;
  std::vector<Result<float>> alone;
  for (int64_t i = 0; i < nseq; ++i) {
    const auto [past, Tq] = seqs[i];
    Case c({Hq, Hkv, D, bs, past, Tq}, 100 + i, 0);
    std::vector<int32_t> t;
    for (int64_t b = 0; b < per_seq; ++b) t.push_back(static_cast<int32_t>(i + b * nseq));
    c.table = t;
    c.num_blocks = num_blocks;
    alone.push_back(run_paged<float>(c, PagedAttnPath::Auto));
    const std::vector<float> k = cast<float>(c.k), v = cast<float>(c.v), q = cast<float>(c.q);
    paged_kv_write(kp.data(), num_blocks, bs, row, t.data(), per_seq, 0, c.Tk, k.data());
    paged_kv_write(vp.data(), num_blocks, bs, row, t.data(), per_seq, 0, c.Tk, v.data());
    q_all.insert(q_all.end(), q.begin(), q.end());
    tables.push_back(t);
  }
  for (int64_t i = 0; i < nseq; ++i)
    ps.push_back({seqs[i].second, seqs[i].first, tables[i].data(), per_seq});
  std::vector<float> out(q_all.size()), lse(q_all.size() / D);
  paged_attention_forward(out.data(), lse.data(), q_all.data(), kp.data(), vp.data(), ps.data(),
                          nseq, {Hq, Hkv, D, bs, num_blocks}, 1.0 / std::sqrt(double(D)));
  size_t o = 0, l = 0;
  for (const Result<float>& a : alone) {
    for (float x : a.out) EXPECT_EQ(out[o++], x);
    for (float x : a.lse) EXPECT_EQ(lse[l++], x);
  }
}

// On the Direct path a query row's result is the same, bit for bit, for
// every chunking of its sequence (see below).
void expect_direct_rows_ignore_chunking(const Case& c) {
  const std::vector<float> q = cast<float>(c.q), kp = c.pool<float>(c.k), vp = c.pool<float>(c.v);
  const int64_t row = c.s.Hq * c.s.D;
  auto run = [&](const std::vector<int64_t>& chunks) {
    std::vector<float> out(q.size());
    int64_t pos = 0;
    for (int64_t n : chunks) {
      const PagedSeq seq{n, pos, c.table.data(), static_cast<int64_t>(c.table.size())};
      paged_attention_forward<float>(out.data() + pos * row, nullptr, q.data() + pos * row,
                                     kp.data(), vp.data(), &seq, 1, c.dims(), c.scale(),
                                     PagedAttnPath::Direct);
      pos += n;
    }
    return out;
  };
  const std::vector<float> whole = run({23});
  EXPECT_EQ(run({5, 8, 10}), whole);
  EXPECT_EQ(run(std::vector<int64_t>(23, 1)), whole);
}

// On the Direct path a query row's result is bit for bit the same however
// its sequence is cut into chunks (one prefill, chunks, or token by token),
// so chunked prefill and prefix-cache hits cannot change it.
TEST(PagedAttention, DirectRowsDoNotDependOnChunking) {
  for (int64_t window : {0, 6})
    expect_direct_rows_ignore_chunking(Case({8, 2, 32, 4, 0, 23, window}, 21));
}

// A lone decoding sequence is split over the threads by key tiles; its
// result is the same, bit for bit, on one thread and on two.
TEST(PagedAttention, DirectRowsDoNotDependOnTheThreadCount) {
  const Case c({8, 2, 32, 16, 300, 1}, 31);
  const int before = omp_get_max_threads();
  omp_set_num_threads(1);
  const Result<float> one = run_paged<float>(c, PagedAttnPath::Direct);
  omp_set_num_threads(2);
  const Result<float> two = run_paged<float>(c, PagedAttnPath::Direct);
  omp_set_num_threads(before);
  EXPECT_EQ(one.out, two.out);
  EXPECT_EQ(one.lse, two.lse);
}

TEST(PagedAttention, NullLseIsAllowed) {
  const Case c({4, 2, 16, 16, 20, 3}, 5);
  const std::vector<float> q = cast<float>(c.q), kp = c.pool<float>(c.k), vp = c.pool<float>(c.v);
  std::vector<float> out(q.size());
  const PagedSeq seq = c.seq();
  paged_attention_forward<float>(out.data(), nullptr, q.data(), kp.data(), vp.data(), &seq, 1,
                                 c.dims(), c.scale());
  EXPECT_LT(max_rel_err(out, run_contiguous(c).out), 1e-6);
}

TEST(PagedAttention, RejectsShortTablesAndForeignBlocks) {
  Case c({4, 2, 16, 16, 20, 3}, 5);
  const std::vector<float> q = cast<float>(c.q), kp = c.pool<float>(c.k), vp = c.pool<float>(c.v);
  std::vector<float> out(q.size());
  PagedSeq seq = c.seq();
  seq.n_blocks = 1;  // 23 positions need 2 blocks of 16
  EXPECT_THROW(paged_attention_forward<float>(out.data(), nullptr, q.data(), kp.data(), vp.data(),
                                              &seq, 1, c.dims(), c.scale()),
               Error);
  c.table[1] = static_cast<int32_t>(c.num_blocks);
  seq = c.seq();
  EXPECT_THROW(paged_attention_forward<float>(out.data(), nullptr, q.data(), kp.data(), vp.data(),
                                              &seq, 1, c.dims(), c.scale()),
               Error);
  std::vector<float> pool(kp.size());
  EXPECT_THROW(
      paged_kv_write(pool.data(), c.num_blocks, 16, 32, c.table.data(), 2, 20, 3, q.data()), Error);
  EXPECT_THROW(paged_attention_forward<float>(out.data(), nullptr, q.data(), kp.data(), vp.data(),
                                              &seq, 1, {3, 2, 16, 16, c.num_blocks}, c.scale()),
               Error);
}

TEST(PagedAttention, KvWriteFillsTheTablesSlots) {
  const int64_t bs = 4, row = 3, num_blocks = 5;
  const std::vector<int32_t> table = {3, 0, 4};
  std::vector<float> pool(static_cast<size_t>(num_blocks * bs * row), -1.0f);
  std::vector<float> src(static_cast<size_t>(7 * row));
  std::iota(src.begin(), src.end(), 0.0f);
  paged_kv_write(pool.data(), num_blocks, bs, row, table.data(), 3, 2, 7, src.data());
  for (int64_t t = 0; t < 7; ++t) {
    const int64_t pos = 2 + t, phys = table[pos / bs];
    for (int64_t e = 0; e < row; ++e)
      EXPECT_EQ(pool[(phys * bs + pos % bs) * row + e], src[t * row + e]);
  }
  EXPECT_EQ(std::count(pool.begin(), pool.end(), -1.0f), (num_blocks * bs - 7) * row);
}

}  // namespace
}  // namespace parallm::cpu
