// Tests of the flash-style CPU attention (kernels/cpu/attention.h) against a
// naive double reference that materialises the scores, against central finite
// differences of L = sum(out * R), and for the key-block split that ring
// attention relies on: partial results merged by their lse equal the whole.
// The document mask (packed documents) against the same reference, finite
// differences, and separate runs of each document; the sliding window
// (Mistral) alone and with documents, against the reference, finite
// differences and key blocks merged by lse.
#include "kernels/cpu/attention.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "base/error.h"
#include "base/rng.h"

namespace parallm::cpu {
namespace {

using Vec = std::vector<double>;
constexpr double kInf = std::numeric_limits<double>::infinity();

Vec random_vec(int64_t n, std::string_view name, double amp = 1.0) {
  const uint64_t key = stream_key(7, name);
  Vec x(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) x[i] = amp * normal_at(key, static_cast<uint64_t>(i));
  return x;
}

int64_t q_numel(const AttnDims& d) { return d.B * d.Tq * d.Hq * d.D; }
int64_t k_numel(const AttnDims& d) { return d.B * d.Tk * d.Hkv * d.D; }

// Key j of query i of row b: causal, inside the query's document when
// there is a document mask, and inside its sliding window when there is one.
bool visible(const AttnDims& d, int64_t b, int64_t i, int64_t j) {
  if (d.doc_start && d.k_pos0 + j < d.doc_start[b * d.doc_ld + d.q_pos0 + i]) return false;
  if (d.window > 0 && d.k_pos0 + j <= d.q_pos0 + i - d.window) return false;
  return !d.causal || d.k_pos0 + j <= d.q_pos0 + i;
}

struct Inputs {
  explicit Inputs(const AttnDims& dims, double amp = 1.0)
      : d(dims),
        q(random_vec(q_numel(d), "q", amp)),
        k(random_vec(k_numel(d), "k", amp)),
        v(random_vec(k_numel(d), "v")),
        r(random_vec(q_numel(d), "r")),
        scale(1.0 / std::sqrt(static_cast<double>(d.D))) {}
  AttnDims d;
  Vec q, k, v, r;  // r: the loss weights, L = sum(out * r), so dout = r
  double scale;
};

// Materialised reference: out, lse, and (when wanted) gradients of sum(out * r).
struct Reference {
  Vec out, lse, dq, dk, dv;
};

Reference reference(const Inputs& in) {
  const AttnDims& d = in.d;
  const int64_t g = d.Hq / d.Hkv;
  Reference ref{Vec(q_numel(d)), Vec(d.B * d.Hq * d.Tq), Vec(q_numel(d)), Vec(k_numel(d)),
                Vec(k_numel(d))};
  auto qi = [&](int64_t b, int64_t t, int64_t h) { return ((b * d.Tq + t) * d.Hq + h) * d.D; };
  auto ki = [&](int64_t b, int64_t t, int64_t h) { return ((b * d.Tk + t) * d.Hkv + h) * d.D; };
  for (int64_t b = 0; b < d.B; ++b) {
    for (int64_t h = 0; h < d.Hq; ++h) {
      const int64_t hk = h / g;
      for (int64_t i = 0; i < d.Tq; ++i) {
        Vec p(d.Tk, 0.0), dp(d.Tk, 0.0);
        double m = -kInf;
        for (int64_t j = 0; j < d.Tk; ++j) {
          if (!visible(d, b, i, j)) continue;
          double s = 0;
          for (int64_t e = 0; e < d.D; ++e) s += in.q[qi(b, i, h) + e] * in.k[ki(b, j, hk) + e];
          p[j] = s * in.scale;
          m = std::max(m, p[j]);
        }
        double sum = 0;
        for (int64_t j = 0; j < d.Tk; ++j) sum += visible(d, b, i, j) ? std::exp(p[j] - m) : 0.0;
        ref.lse[(b * d.Hq + h) * d.Tq + i] = sum > 0 ? m + std::log(sum) : -kInf;
        if (sum == 0) continue;  // out row stays 0, no gradient
        for (int64_t j = 0; j < d.Tk; ++j)
          p[j] = visible(d, b, i, j) ? std::exp(p[j] - m) / sum : 0;
        double di = 0;
        for (int64_t j = 0; j < d.Tk; ++j) {
          for (int64_t e = 0; e < d.D; ++e) {
            ref.out[qi(b, i, h) + e] += p[j] * in.v[ki(b, j, hk) + e];
            dp[j] += in.r[qi(b, i, h) + e] * in.v[ki(b, j, hk) + e];
          }
          di += p[j] * dp[j];
        }
        for (int64_t j = 0; j < d.Tk; ++j) {
          const double ds = p[j] * (dp[j] - di) * in.scale;
          for (int64_t e = 0; e < d.D; ++e) {
            ref.dq[qi(b, i, h) + e] += ds * in.k[ki(b, j, hk) + e];
            ref.dk[ki(b, j, hk) + e] += ds * in.q[qi(b, i, h) + e];
            ref.dv[ki(b, j, hk) + e] += p[j] * in.r[qi(b, i, h) + e];
          }
        }
      }
    }
  }
  return ref;
}

template <class T>
std::vector<T> cast(const Vec& x) {
  return std::vector<T>(x.begin(), x.end());
}

template <class T>
struct Result {
  std::vector<T> out, lse, dq, dk, dv;
};

// Runs the kernels in precision T; gradients start from 0.5 to check that they accumulate.
template <class T>
Result<T> run(const Inputs& in, bool with_backward, AttnBwdSplit split = AttnBwdSplit::Auto) {
  const AttnDims& d = in.d;
  const auto q = cast<T>(in.q), k = cast<T>(in.k), v = cast<T>(in.v), r = cast<T>(in.r);
  Result<T> res{
      std::vector<T>(q_numel(d), T(7)), std::vector<T>(d.B * d.Hq * d.Tq, T(7)), {}, {}, {}};
  attention_forward(res.out.data(), res.lse.data(), q.data(), k.data(), v.data(), d, in.scale);
  if (with_backward) {
    res.dq.assign(q_numel(d), T(0.5));
    res.dk.assign(k_numel(d), T(0.5));
    res.dv.assign(k_numel(d), T(0.5));
    attention_backward_split(res.dq.data(), res.dk.data(), res.dv.data(), r.data(), q.data(),
                             k.data(), v.data(), res.out.data(), res.lse.data(), d, in.scale,
                             split);
    for (auto* g : {&res.dq, &res.dk, &res.dv})
      for (T& x : *g) x -= T(0.5);
  }
  return res;
}

template <class T>
void expect_near(const std::vector<T>& got, const Vec& want, double tol, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::isinf(want[i])) {
      EXPECT_EQ(static_cast<double>(got[i]), want[i]) << what << "[" << i << "]";
    } else {
      EXPECT_NEAR(static_cast<double>(got[i]), want[i], tol * (1.0 + std::abs(want[i])))
          << what << "[" << i << "]";
    }
  }
}

template <class T>
void expect_matches_reference(const Inputs& in, double tol, AttnBwdSplit split) {
  const Reference ref = reference(in);
  const Result<T> res = run<T>(in, true, split);
  expect_near(res.out, ref.out, tol, "out");
  expect_near(res.lse, ref.lse, tol, "lse");
  expect_near(res.dq, ref.dq, tol, "dq");
  expect_near(res.dk, ref.dk, tol, "dk");
  expect_near(res.dv, ref.dv, tol, "dv");
}

// Shapes: odd sizes; GQA and plain MHA; sequences crossing the 64-row block.
const AttnDims kShapes[] = {
    {.B = 2, .Tq = 7, .Tk = 7, .Hq = 6, .Hkv = 2, .D = 5},
    {.B = 2, .Tq = 7, .Tk = 7, .Hq = 3, .Hkv = 3, .D = 5},
    {.B = 2, .Tq = 100, .Tk = 100, .Hq = 4, .Hkv = 1, .D = 16},
    {.B = 2, .Tq = 131, .Tk = 131, .Hq = 2, .Hkv = 2, .D = 16},
};

// dq, dk, dv of `res` against central differences of L = sum(out * r) with
// respect to every element of in.q, in.k and in.v (double precision).
void expect_grads_match_finite_differences(Inputs& in, const Result<double>& res) {
  auto loss = [&]() {
    const Result<double> f = run<double>(in, false);
    double l = 0;
    for (size_t i = 0; i < f.out.size(); ++i) l += f.out[i] * in.r[i];
    return l;
  };
  auto check = [&](Vec& x, const std::vector<double>& grad, const char* what) {
    const double h = 1e-5;
    for (size_t i = 0; i < x.size(); ++i) {
      const double x0 = x[i];
      x[i] = x0 + h;
      const double lp = loss();
      x[i] = x0 - h;
      const double lm = loss();
      x[i] = x0;
      const double fd = (lp - lm) / (2 * h);
      EXPECT_NEAR(grad[i], fd, 1e-6 * (1.0 + std::abs(fd))) << what << "[" << i << "]";
    }
  };
  check(in.q, res.dq, "dq");
  check(in.k, res.dk, "dk");
  check(in.v, res.dv, "dv");
}

TEST(Attention, MatchesReferenceInDouble) {
  for (const AttnDims& d : kShapes) {
    for (auto split : {AttnBwdSplit::ByKvHead, AttnBwdSplit::TwoPass}) {
      SCOPED_TRACE(testing::Message() << "T=" << d.Tq << " Hq=" << d.Hq << " Hkv=" << d.Hkv
                                      << " split=" << static_cast<int>(split));
      expect_matches_reference<double>(Inputs(d), 1e-11, split);
    }
  }
}

TEST(Attention, FloatAgreesWithReference) {
  for (const AttnDims& d : kShapes) {
    for (auto split : {AttnBwdSplit::ByKvHead, AttnBwdSplit::TwoPass}) {
      SCOPED_TRACE(testing::Message() << "T=" << d.Tq << " split=" << static_cast<int>(split));
      expect_matches_reference<float>(Inputs(d), 2e-5, split);
    }
  }
}

// Every gradient element of the double kernel against central differences of L = sum(out * r).
TEST(Attention, GradientsMatchFiniteDifferences) {
  const AttnDims shapes[] = {
      {.B = 2, .Tq = 7, .Tk = 7, .Hq = 6, .Hkv = 2, .D = 5},
      {.B = 1, .Tq = 3, .Tk = 6, .Hq = 2, .Hkv = 1, .D = 3, .q_pos0 = 4, .k_pos0 = 1},
  };
  for (const AttnDims& d : shapes) {
    Inputs in(d, 1.5);  // larger scores: a less uniform softmax
    expect_grads_match_finite_differences(in, run<double>(in, true));
  }
}

TEST(Attention, OffsetsAndNonCausal) {
  const AttnDims shapes[] = {
      // KV cache: one new token at position 8 sees all 9 cached keys.
      {.B = 2, .Tq = 1, .Tk = 9, .Hq = 4, .Hkv = 2, .D = 6, .q_pos0 = 8},
      // Queries 4..8 against keys 0..8: a rectangle with a partial diagonal.
      {.B = 1, .Tq = 5, .Tk = 9, .Hq = 2, .Hkv = 1, .D = 4, .q_pos0 = 4},
      // Keys start after some queries: those rows see nothing.
      {.B = 1, .Tq = 6, .Tk = 4, .Hq = 2, .Hkv = 2, .D = 3, .q_pos0 = 0, .k_pos0 = 3},
      // Ring step with the key block entirely in the past: fully visible.
      {.B = 1, .Tq = 5, .Tk = 5, .Hq = 3, .Hkv = 1, .D = 4, .q_pos0 = 10, .k_pos0 = 0},
      {.B = 2, .Tq = 5, .Tk = 8, .Hq = 4, .Hkv = 2, .D = 3, .causal = false},
      {.B = 1, .Tq = 67, .Tk = 90, .Hq = 2, .Hkv = 1, .D = 4, .q_pos0 = 30, .k_pos0 = 5},
  };
  for (const AttnDims& d : shapes) {
    for (auto split : {AttnBwdSplit::ByKvHead, AttnBwdSplit::TwoPass}) {
      SCOPED_TRACE(testing::Message() << "Tq=" << d.Tq << " Tk=" << d.Tk << " q_pos0=" << d.q_pos0
                                      << " k_pos0=" << d.k_pos0 << " causal=" << d.causal);
      expect_matches_reference<double>(Inputs(d), 1e-11, split);
    }
  }
}

TEST(Attention, KvCacheTokenEqualsLastRowOfFullAttention) {
  const AttnDims full{.B = 1, .Tq = 9, .Tk = 9, .Hq = 4, .Hkv = 2, .D = 6};
  const Inputs in_full(full);
  Inputs in_last(AttnDims{.B = 1, .Tq = 1, .Tk = 9, .Hq = 4, .Hkv = 2, .D = 6, .q_pos0 = 8});
  const int64_t row = full.Hq * full.D;
  in_last.q.assign(in_full.q.end() - row, in_full.q.end());
  in_last.k = in_full.k;
  in_last.v = in_full.v;
  const Result<double> a = run<double>(in_full, false), b = run<double>(in_last, false);
  for (int64_t e = 0; e < row; ++e) EXPECT_NEAR(b.out[e], a.out[8 * row + e], 1e-13);
  for (int64_t h = 0; h < full.Hq; ++h) EXPECT_NEAR(b.lse[h], a.lse[h * 9 + 8], 1e-13);
}

TEST(Attention, FutureKeyBlockGivesZeroOutputAndNoGradient) {
  for (auto split : {AttnBwdSplit::ByKvHead, AttnBwdSplit::TwoPass}) {
    const Inputs in(
        AttnDims{.B = 2, .Tq = 4, .Tk = 4, .Hq = 2, .Hkv = 1, .D = 3, .q_pos0 = 0, .k_pos0 = 4});
    const Result<float> res = run<float>(in, true, split);
    for (float x : res.out) EXPECT_EQ(x, 0.0f);
    for (float x : res.lse) EXPECT_EQ(x, -std::numeric_limits<float>::infinity());
    for (const auto* g : {&res.dq, &res.dk, &res.dv})
      for (float x : *g) EXPECT_EQ(x, 0.0f);
  }
}

// Ring attention: keys split in two blocks (the second partly in the future);
// merging the partial outputs by their lse gives the full forward, and each
// block's backward, fed the merged out and lse, adds up to the full backward.
TEST(Attention, KeyBlocksMergeByLse) {
  const AttnDims dfull{.B = 2, .Tq = 9, .Tk = 9, .Hq = 4, .Hkv = 2, .D = 5, .q_pos0 = 0};
  const Inputs full(dfull);
  const Reference ref = reference(full);
  const int64_t split = 4, kw = dfull.Hkv * dfull.D;
  Inputs part[2] = {Inputs(dfull), Inputs(dfull)};
  for (int p = 0; p < 2; ++p) {
    part[p].d.Tk = p == 0 ? split : dfull.Tk - split;
    part[p].d.k_pos0 = p == 0 ? 0 : split;
    const int64_t j0 = p == 0 ? 0 : split;
    part[p].k.clear();
    part[p].v.clear();
    for (int64_t b = 0; b < dfull.B; ++b) {
      const int64_t first = (b * dfull.Tk + j0) * kw, last = first + part[p].d.Tk * kw;
      part[p].k.insert(part[p].k.end(), full.k.begin() + first, full.k.begin() + last);
      part[p].v.insert(part[p].v.end(), full.v.begin() + first, full.v.begin() + last);
    }
  }
  const Result<double> r0 = run<double>(part[0], false), r1 = run<double>(part[1], false);
  Vec out(ref.out.size()), lse(ref.lse.size());
  const int64_t D = dfull.D;
  for (int64_t b = 0; b < dfull.B; ++b) {
    for (int64_t h = 0; h < dfull.Hq; ++h) {
      for (int64_t i = 0; i < dfull.Tq; ++i) {
        const int64_t li = (b * dfull.Hq + h) * dfull.Tq + i;
        const double l0 = r0.lse[li], l1 = r1.lse[li];
        const double m = std::max(l0, l1);
        lse[li] = m + std::log(std::exp(l0 - m) + std::exp(l1 - m));
        const int64_t oi = ((b * dfull.Tq + i) * dfull.Hq + h) * D;
        for (int64_t e = 0; e < D; ++e)
          out[oi + e] =
              std::exp(l0 - lse[li]) * r0.out[oi + e] + std::exp(l1 - lse[li]) * r1.out[oi + e];
      }
    }
  }
  expect_near(out, ref.out, 1e-12, "merged out");
  expect_near(lse, ref.lse, 1e-12, "merged lse");

  Vec dq(ref.dq.size(), 0.0), dk(ref.dk.size(), 0.0), dv(ref.dv.size(), 0.0);
  for (int p = 0; p < 2; ++p) {
    Vec dkp(k_numel(part[p].d), 0.0), dvp(k_numel(part[p].d), 0.0);
    attention_backward(dq.data(), dkp.data(), dvp.data(), full.r.data(), full.q.data(),
                       part[p].k.data(), part[p].v.data(), out.data(), lse.data(), part[p].d,
                       full.scale);
    for (int64_t b = 0; b < dfull.B; ++b) {  // put this block's keys back in place
      const int64_t j0 = p == 0 ? 0 : split, n = part[p].d.Tk * kw;
      std::copy_n(dkp.begin() + b * n, n, dk.begin() + (b * dfull.Tk + j0) * kw);
      std::copy_n(dvp.begin() + b * n, n, dv.begin() + (b * dfull.Tk + j0) * kw);
    }
  }
  expect_near(dq, ref.dq, 1e-11, "ring dq");
  expect_near(dk, ref.dk, 1e-11, "ring dk");
  expect_near(dv, ref.dv, 1e-11, "ring dv");
}

TEST(Attention, BackwardIsDeterministic) {
  const Inputs in(AttnDims{.B = 1, .Tq = 150, .Tk = 150, .Hq = 4, .Hkv = 2, .D = 8});
  for (auto split : {AttnBwdSplit::ByKvHead, AttnBwdSplit::TwoPass}) {
    const Result<float> a = run<float>(in, true, split), b = run<float>(in, true, split);
    EXPECT_EQ(a.dq, b.dq);
    EXPECT_EQ(a.dk, b.dk);
    EXPECT_EQ(a.dv, b.dv);
  }
}

// Dropout: the mask is fixed for a fixed key, so the backward must be the
// exact gradient of the dropped forward.
TEST(Attention, DropoutGradientsMatchFiniteDifferences) {
  AttnDims shapes[] = {
      {.B = 2, .Tq = 7, .Tk = 7, .Hq = 6, .Hkv = 2, .D = 5},
      {.B = 1, .Tq = 3, .Tk = 6, .Hq = 2, .Hkv = 1, .D = 3, .q_pos0 = 4, .k_pos0 = 1},
  };
  for (AttnDims& d : shapes) {
    d.dropout_p = 0.3;
    d.dropout_key = 12345;
    for (AttnBwdSplit split : {AttnBwdSplit::ByKvHead, AttnBwdSplit::TwoPass}) {
      Inputs in(d, 1.5);
      expect_grads_match_finite_differences(in, run<double>(in, true, split));
    }
  }
}

// Dropout changes the output but not lse; p = 0 or key 0 is exactly no dropout;
// the mask follows global heads and samples, so a head/batch split agrees.
TEST(Attention, DropoutIsKeyedByGlobalIndices) {
  AttnDims d{.B = 2, .Tq = 9, .Tk = 9, .Hq = 4, .Hkv = 2, .D = 4};
  const Inputs plain(d);
  const Result<double> base = run<double>(plain, false);
  AttnDims dd = d;
  dd.dropout_p = 0.25;
  dd.dropout_key = 99;
  const Inputs dropped(dd);
  const Result<double> full = run<double>(dropped, false);
  EXPECT_EQ(full.lse, base.lse);
  EXPECT_NE(full.out, base.out);
  AttnDims off = d;
  off.dropout_p = 0.25;  // key 0: eval, no dropout
  EXPECT_EQ(run<double>(Inputs(off), false).out, base.out);
  // Second sample, heads 2..3 and kv group 1 alone, with head0 = 2, sample0 = 1.
  AttnDims part = dd;
  part.B = 1;
  part.Hq = 2;
  part.Hkv = 1;
  part.head0 = 2;
  part.sample0 = 1;
  Inputs pin(part);
  auto slice = [&](const Vec& x, int64_t T, int64_t H, int64_t h0, int64_t nh) {
    Vec y;
    for (int64_t t = 0; t < T; ++t)
      for (int64_t h = h0; h < h0 + nh; ++h)
        for (int64_t e = 0; e < d.D; ++e) y.push_back(x[((1 * T + t) * H + h) * d.D + e]);
    return y;
  };
  pin.q = slice(dropped.q, d.Tq, d.Hq, 2, 2);
  pin.k = slice(dropped.k, d.Tk, d.Hkv, 1, 1);
  pin.v = slice(dropped.v, d.Tk, d.Hkv, 1, 1);
  const Result<double> p = run<double>(pin, false);
  const Vec want = slice(full.out, d.Tq, d.Hq, 2, 2);
  ASSERT_EQ(p.out.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(p.out[i], want[i], 1e-12) << i;
}

TEST(Attention, RejectsBadHeads) {
  const AttnDims d{.B = 1, .Tq = 2, .Tk = 2, .Hq = 3, .Hkv = 2, .D = 4};
  std::vector<float> x(64), lse(8);
  EXPECT_THROW(attention_forward(x.data(), lse.data(), x.data(), x.data(), x.data(), d, 0.5),
               Error);
}

// Packed documents: doc_start (B, T) of rows whose documents have the given
// lengths (each row's lengths sum to T).
std::vector<int64_t> doc_starts(const std::vector<std::vector<int64_t>>& lengths, int64_t T) {
  std::vector<int64_t> s;
  for (const auto& row : lengths) {
    int64_t start = 0;
    for (int64_t n : row) {
      for (int64_t i = 0; i < n; ++i) s.push_back(start);
      start += n;
    }
    EXPECT_EQ(start, T);
  }
  return s;
}

TEST(Attention, DocumentMaskMatchesReference) {
  // Two rows with different cuts, documents of one token, documents crossing
  // the 64-row query block and the 64-key block of the two-pass backward.
  const std::vector<int64_t> short_docs = doc_starts({{3, 1, 2, 1}, {7}}, 7);
  const std::vector<int64_t> long_docs = doc_starts({{1, 70, 5, 55}, {64, 1, 66}}, 131);
  AttnDims shapes[] = {
      {.B = 2, .Tq = 7, .Tk = 7, .Hq = 6, .Hkv = 2, .D = 5},
      {.B = 2, .Tq = 131, .Tk = 131, .Hq = 4, .Hkv = 2, .D = 8},
      // A ring step: queries 70..130 against keys 40..99 of the same rows.
      {.B = 2, .Tq = 61, .Tk = 60, .Hq = 2, .Hkv = 1, .D = 4, .q_pos0 = 70, .k_pos0 = 40},
      // Keys wholly before every query's document: nothing visible.
      {.B = 2, .Tq = 10, .Tk = 20, .Hq = 2, .Hkv = 2, .D = 4, .q_pos0 = 121, .k_pos0 = 0},
  };
  shapes[0].doc_start = short_docs.data();
  shapes[0].doc_ld = 7;
  for (int s = 1; s < 4; ++s) {
    shapes[s].doc_start = long_docs.data();
    shapes[s].doc_ld = 131;
  }
  for (const AttnDims& d : shapes) {
    for (auto split : {AttnBwdSplit::ByKvHead, AttnBwdSplit::TwoPass}) {
      SCOPED_TRACE(testing::Message()
                   << "Tq=" << d.Tq << " Tk=" << d.Tk << " q_pos0=" << d.q_pos0
                   << " k_pos0=" << d.k_pos0 << " split=" << static_cast<int>(split));
      expect_matches_reference<double>(Inputs(d), 1e-11, split);
      expect_matches_reference<float>(Inputs(d), 2e-5, split);
    }
  }
  // The last shape: every row has no visible key.
  const Result<float> none = run<float>(Inputs(shapes[3]), true);
  for (float x : none.lse) EXPECT_EQ(x, -std::numeric_limits<float>::infinity());
  for (const auto* g : {&none.out, &none.dq, &none.dk, &none.dv})
    for (float x : *g) EXPECT_EQ(x, 0.0f);
}

// A packed row equals each of its documents run alone (positions restart at
// 0 there): out, lse and every gradient, row by row.
TEST(Attention, DocumentMaskEqualsSeparateDocuments) {
  const std::vector<int64_t> lengths = {5, 70, 1, 24};
  const int64_t T = 100;
  const std::vector<int64_t> starts = doc_starts({lengths}, T);
  AttnDims d{.B = 1, .Tq = T, .Tk = T, .Hq = 4, .Hkv = 2, .D = 6};
  d.doc_start = starts.data();
  d.doc_ld = T;
  const Inputs packed(d);
  const Result<double> whole = run<double>(packed, true);
  const int64_t qw = d.Hq * d.D, kw = d.Hkv * d.D;
  int64_t t0 = 0;
  for (int64_t n : lengths) {
    SCOPED_TRACE(testing::Message() << "document at " << t0 << " of " << n << " tokens");
    Inputs one(AttnDims{.B = 1, .Tq = n, .Tk = n, .Hq = 4, .Hkv = 2, .D = 6});
    auto rows = [&](const Vec& x, int64_t w) {
      return Vec(x.begin() + t0 * w, x.begin() + (t0 + n) * w);
    };
    one.q = rows(packed.q, qw);
    one.k = rows(packed.k, kw);
    one.v = rows(packed.v, kw);
    one.r = rows(packed.r, qw);
    const Result<double> alone = run<double>(one, true);
    expect_near(alone.out, rows(Vec(whole.out.begin(), whole.out.end()), qw), 1e-12, "out");
    expect_near(alone.dq, rows(Vec(whole.dq.begin(), whole.dq.end()), qw), 1e-12, "dq");
    expect_near(alone.dk, rows(Vec(whole.dk.begin(), whole.dk.end()), kw), 1e-12, "dk");
    expect_near(alone.dv, rows(Vec(whole.dv.begin(), whole.dv.end()), kw), 1e-12, "dv");
    for (int64_t h = 0; h < d.Hq; ++h)
      for (int64_t i = 0; i < n; ++i)
        EXPECT_NEAR(alone.lse[h * n + i], whole.lse[h * T + t0 + i], 1e-12);
    t0 += n;
  }
}

TEST(Attention, RejectsShortDocumentStarts) {
  const std::vector<int64_t> starts(4, 0);
  AttnDims d{.B = 1, .Tq = 2, .Tk = 2, .Hq = 1, .Hkv = 1, .D = 4, .q_pos0 = 3, .k_pos0 = 3};
  d.doc_start = starts.data();
  d.doc_ld = 4;  // positions 3 and 4 are queried
  std::vector<float> x(8), lse(2);
  try {
    attention_forward(x.data(), lse.data(), x.data(), x.data(), x.data(), d, 0.5);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("document starts of 4 positions"), std::string::npos)
        << e.what();
  }
}

// Sliding windows smaller and larger than T, of 1 (each query sees itself
// only) and crossing the 64-row query and key blocks; odd sizes, GQA, an
// offset ring step, both backward splits, double and float, with and
// without packed documents.
TEST(Attention, SlidingWindowMatchesReference) {
  const std::vector<int64_t> docs7 = doc_starts({{3, 1, 2, 1}, {7}}, 7);
  const std::vector<int64_t> docs131 = doc_starts({{1, 70, 5, 55}, {64, 1, 66}}, 131);
  struct Case {
    AttnDims d;
    const std::vector<int64_t>* docs;
  };
  std::vector<Case> cases;
  auto add = [&](AttnDims d, int64_t window, const std::vector<int64_t>* docs) {
    d.window = window;
    cases.push_back({d, docs});
  };
  const AttnDims small{.B = 2, .Tq = 7, .Tk = 7, .Hq = 6, .Hkv = 2, .D = 5};
  const AttnDims large{.B = 2, .Tq = 131, .Tk = 131, .Hq = 4, .Hkv = 2, .D = 8};
  for (const std::vector<int64_t>* docs :
       {static_cast<const std::vector<int64_t>*>(nullptr), &docs7})
    for (int64_t w : {1, 3, 7, 9}) add(small, w, docs);
  for (const std::vector<int64_t>* docs :
       {static_cast<const std::vector<int64_t>*>(nullptr), &docs131})
    for (int64_t w : {2, 17, 64, 65, 100, 200}) add(large, w, docs);
  // Ring steps (queries 70..130 against keys 40..99, and against keys
  // 0..39, which a window of 20 hides from every query).
  for (int64_t w : {20, 45})
    for (int64_t k0 : {0, 40}) {
      const AttnDims step{.B = 2,
                          .Tq = 61,
                          .Tk = k0 == 0 ? 40 : 60,
                          .Hq = 2,
                          .Hkv = 1,
                          .D = 4,
                          .q_pos0 = 70,
                          .k_pos0 = k0};
      add(step, w, nullptr);
      add(step, w, &docs131);
    }
  for (Case& c : cases) {
    if (c.docs != nullptr) {
      c.d.doc_start = c.docs->data();
      c.d.doc_ld = c.d.q_pos0 + c.d.Tq;
    }
    for (auto split : {AttnBwdSplit::ByKvHead, AttnBwdSplit::TwoPass}) {
      const AttnDims& d = c.d;
      SCOPED_TRACE(testing::Message()
                   << "Tq=" << d.Tq << " Tk=" << d.Tk << " q_pos0=" << d.q_pos0
                   << " k_pos0=" << d.k_pos0 << " window=" << d.window
                   << " docs=" << (d.doc_start != nullptr) << " split=" << static_cast<int>(split));
      expect_matches_reference<double>(Inputs(d), 1e-11, split);
      expect_matches_reference<float>(Inputs(d), 2e-5, split);
    }
  }
}

// The window acts: it changes the output exactly where a query has keys
// beyond it, and a window of T or more is no window at all.
TEST(Attention, SlidingWindowHidesOnlyOldKeys) {
  const AttnDims full{.B = 1, .Tq = 10, .Tk = 10, .Hq = 2, .Hkv = 1, .D = 4};
  AttnDims wide = full, narrow = full;
  wide.window = 10;
  narrow.window = 4;
  const Result<double> a = run<double>(Inputs(full), false), b = run<double>(Inputs(wide), false),
                       c = run<double>(Inputs(narrow), false);
  EXPECT_EQ(a.out, b.out);
  EXPECT_EQ(a.lse, b.lse);
  const int64_t row = full.Hq * full.D;
  for (int64_t i = 0; i < full.Tq; ++i) {
    double diff = 0.0;
    for (int64_t e = 0; e < row; ++e)
      diff = std::max(diff, std::abs(a.out[i * row + e] - c.out[i * row + e]));
    if (i < 4)
      EXPECT_EQ(diff, 0.0) << "query " << i << " sees all its keys";
    else
      EXPECT_GT(diff, 1e-6) << "query " << i << " lost keys 0.." << i - 4;
  }
}

// Gradients under each mask (documents, a sliding window, both) and with
// dropout match finite differences, for both backward splits.
TEST(Attention, MaskedGradientsMatchFiniteDifferences) {
  const std::vector<int64_t> starts = doc_starts({{2, 3, 2}, {1, 6}}, 7);
  for (auto [docs, window] : {std::pair{true, 0}, std::pair{false, 3}, std::pair{true, 3}}) {
    for (double p : {0.0, 0.3}) {
      AttnDims d{.B = 2, .Tq = 7, .Tk = 7, .Hq = 4, .Hkv = 2, .D = 3};
      d.window = window;
      if (docs) {
        d.doc_start = starts.data();
        d.doc_ld = 7;
      }
      d.dropout_p = p;
      d.dropout_key = p > 0 ? 777 : 0;
      for (AttnBwdSplit split : {AttnBwdSplit::ByKvHead, AttnBwdSplit::TwoPass}) {
        Inputs in(d, 1.5);
        expect_grads_match_finite_differences(in, run<double>(in, true, split));
      }
    }
  }
}

// Ring attention's split under a window: key blocks run separately (one of
// them wholly outside some rows' windows) and merged by lse equal the whole.
TEST(Attention, SlidingWindowKeyBlocksMergeByLse) {
  const int64_t T = 90, cut = 37, window = 30;
  AttnDims full{.B = 1, .Tq = T, .Tk = T, .Hq = 2, .Hkv = 1, .D = 4};
  full.window = window;
  const Inputs in(full);
  const Result<double> whole = run<double>(in, false);
  const int64_t kw = full.Hkv * full.D, qw = full.Hq * full.D;
  Result<double> part[2];
  for (int p = 0; p < 2; ++p) {
    AttnDims d = full;
    d.Tk = p == 0 ? cut : T - cut;
    d.k_pos0 = p == 0 ? 0 : cut;
    Inputs pi(d);
    pi.q = in.q;
    pi.k.assign(in.k.begin() + d.k_pos0 * kw, in.k.begin() + (d.k_pos0 + d.Tk) * kw);
    pi.v.assign(in.v.begin() + d.k_pos0 * kw, in.v.begin() + (d.k_pos0 + d.Tk) * kw);
    part[p] = run<double>(pi, false);
  }
  for (int64_t h = 0; h < full.Hq; ++h)
    for (int64_t i = 0; i < T; ++i) {
      const double l0 = part[0].lse[h * T + i], l1 = part[1].lse[h * T + i];
      const double m = std::max(l0, l1), lse = m + std::log(std::exp(l0 - m) + std::exp(l1 - m));
      EXPECT_NEAR(lse, whole.lse[h * T + i], 1e-12);
      const double w0 = std::exp(l0 - lse), w1 = std::exp(l1 - lse);
      for (int64_t e = 0; e < full.D; ++e) {
        const int64_t o = i * qw + h * full.D + e;
        EXPECT_NEAR(w0 * part[0].out[o] + w1 * part[1].out[o], whole.out[o], 1e-12);
      }
    }
}

TEST(Attention, RejectsNonCausalWindow) {
  AttnDims d{.B = 1, .Tq = 2, .Tk = 2, .Hq = 1, .Hkv = 1, .D = 4, .causal = false};
  d.window = 1;
  std::vector<float> x(8), lse(2);
  EXPECT_THROW(attention_forward(x.data(), lse.data(), x.data(), x.data(), x.data(), d, 0.5),
               Error);
}

}  // namespace
}  // namespace parallm::cpu
