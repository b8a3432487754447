// The chunk pairs of chunk_attention.h. Chunks are copied into contiguous
// (B, len, H, D) tiles because the kernel's rows of one batch entry are
// contiguous; the copies are O(len) per chunk against O(len^2) attention.
#include "parallel/context/chunk_attention.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "base/error.h"
#include "parallel/context/cp_chunks.h"

namespace parallm {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Which rows and columns a tile holds: batch entries [b0, b1) and floats
// [col, col + w) of each token's row (all of a row: col 0, w = row).
struct Window {
  int64_t b0, b1, col, w;
};

// Rows of chunk c of x (B, n*len, row) <-> tile (b1 - b0, len, w).
void get_chunk(float* tile, const float* x, int64_t n, int64_t len, int64_t row, int64_t c,
               const Window& win) {
  for (int64_t b = win.b0; b < win.b1; ++b) {
    const float* src = x + (b * n + c) * len * row + win.col;
    float* dst = tile + (b - win.b0) * len * win.w;
    if (win.w == row) {
      std::memcpy(dst, src, static_cast<size_t>(len * row) * sizeof(float));
      continue;
    }
    for (int64_t t = 0; t < len; ++t)
      std::memcpy(dst + t * win.w, src + t * row, static_cast<size_t>(win.w) * sizeof(float));
  }
}
void add_chunk(float* x, const float* tile, int64_t n, int64_t len, int64_t row, int64_t c,
               const Window& win) {
  for (int64_t b = win.b0; b < win.b1; ++b)
    for (int64_t t = 0; t < len; ++t) {
      float* dst = x + ((b * n + c) * len + t) * row + win.col;
      const float* src = tile + ((b - win.b0) * len + t) * win.w;
      for (int64_t i = 0; i < win.w; ++i) dst[i] += src[i];
    }
}
// lse (B, H, n*len) -> tile (b1 - b0, h1 - h0, len) of chunk c.
void get_lse(float* tile, const float* lse, int64_t H, int64_t n, int64_t len, int64_t c,
             int64_t b0, int64_t b1, int64_t h0, int64_t h1) {
  for (int64_t b = b0; b < b1; ++b)
    for (int64_t h = h0; h < h1; ++h)
      std::memcpy(tile + ((b - b0) * (h1 - h0) + h - h0) * len,
                  lse + (b * H + h) * n * len + c * len, static_cast<size_t>(len) * sizeof(float));
}

ops::AttnDims pair_dims(const ops::AttnDims& base, int64_t len, int64_t q0, int64_t k0) {
  ops::AttnDims d = base;
  d.Tq = d.Tk = len;
  d.q_pos0 = q0;
  d.k_pos0 = k0;
  d.causal = true;  // positions decide; a key chunk wholly in the past sees everything
  return d;
}

// A pair with nothing visible: keys all in the queries' future, all before
// the sliding window of every query (the chunk's first query reaches back
// furthest), or (packed documents) all before the document of every row's
// queries. Document starts grow along a row, so the chunk's first query has
// the earliest.
bool fully_masked(const ops::AttnDims& d, int64_t q0, int64_t k0, int64_t len) {
  if (k0 > q0 + len - 1) return true;
  if (d.window > 0 && k0 + len - 1 <= q0 - d.window) return true;
  if (d.doc_start == nullptr) return false;
  for (int64_t b = 0; b < d.B; ++b)
    if (k0 + len - 1 >= d.doc_start[b * d.doc_ld + q0]) return false;
  return true;
}

// The sizes both passes walk: nq query and nk key chunks of len tokens;
// qrow / krow floats per token of q and of k, v.
struct PairShape {
  PairShape(const ChunkSet& qs, const ChunkSet& ks, const ops::AttnDims& base)
      : B(base.B),
        Hq(base.Hq),
        len(qs.len),
        nq(static_cast<int64_t>(qs.pos0.size())),
        nk(static_cast<int64_t>(ks.pos0.size())),
        qrow(base.Hq * base.D),
        krow(base.Hkv * base.D) {
    PX_CHECK(qs.len == ks.len && qs.len > 0,
             "chunk attention: query chunks of {} tokens and key chunks of {}", qs.len, ks.len);
  }
  int64_t B, Hq, len, nq, nk, qrow, krow;
};

}  // namespace

void chunk_attention_init(float* out, float* lse, int64_t B, int64_t tokens, int64_t Hq,
                          int64_t D) {
  std::fill_n(out, B * tokens * Hq * D, 0.0f);
  std::fill_n(lse, B * Hq * tokens, kNegInf);
}

void chunk_attention_forward(float* out, float* lse, const float* q, const ChunkSet& qs,
                             const float* k, const float* v, const ChunkSet& ks,
                             const ops::AttnDims& base, double scale, AttnWork* work,
                             const std::function<void()>& progress) {
  const PairShape sh(qs, ks, base);
  const int64_t B = sh.B, Hq = sh.Hq, D = base.D, len = sh.len, nq = sh.nq, nk = sh.nk;
  const int64_t qrow = sh.qrow, krow = sh.krow;
  std::vector<float> qt(B * len * qrow), ot(B * len * qrow), lt(B * Hq * len);
  std::vector<float> kt(B * len * krow), vt(B * len * krow);
  const Window qwin{0, B, 0, qrow}, kwin{0, B, 0, krow};
  for (int64_t j = 0; j < nk; ++j) {
    bool loaded = false;
    for (int64_t i = 0; i < nq; ++i) {
      if (fully_masked(base, qs.pos0[i], ks.pos0[j], len)) continue;
      if (!loaded) {
        get_chunk(kt.data(), k, nk, len, krow, j, kwin);
        get_chunk(vt.data(), v, nk, len, krow, j, kwin);
        loaded = true;
      }
      get_chunk(qt.data(), q, nq, len, qrow, i, qwin);
      ops::AttnDims d = pair_dims(base, len, qs.pos0[i], ks.pos0[j]);
      if (progress) d.progress = &progress;
      ops::attention_forward(ops::Stream::host(), ot.data(), lt.data(), qt.data(), kt.data(),
                             vt.data(), d, scale);
      if (work) work->pairs += B * Hq * causal_pairs(qs.pos0[i], ks.pos0[j], len);
      if (progress) progress();
      // Merge (ot, lt) into rows of chunk i: out = out*e^(lse-new) + ot*e^(lt-new).
      for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < Hq; ++h)
          for (int64_t t = 0; t < len; ++t) {
            const float lp = lt[(b * Hq + h) * len + t];
            if (lp == kNegInf) continue;
            float& la = lse[(b * Hq + h) * nq * len + i * len + t];
            float* o = out + ((b * nq + i) * len + t) * qrow + h * D;
            const float* op = ot.data() + (b * len + t) * qrow + h * D;
            if (la == kNegInf) {
              std::memcpy(o, op, static_cast<size_t>(D) * sizeof(float));
              la = lp;
              continue;
            }
            const double m = std::max(la, lp);
            const double ea = std::exp(la - m), ep = std::exp(lp - m), s = ea + ep;
            const float wa = static_cast<float>(ea / s), wp = static_cast<float>(ep / s);
            for (int64_t e = 0; e < D; ++e) o[e] = o[e] * wa + op[e] * wp;
            la = static_cast<float>(m + std::log(s));
          }
    }
  }
}

void chunk_attention_backward(float* dq, float* dk, float* dv, const float* dout, const float* q,
                              const ChunkSet& qs, const float* k, const float* v,
                              const ChunkSet& ks, const float* out, const float* lse,
                              const ops::AttnDims& base, double scale,
                              const std::function<void()>& progress, AttnPart part) {
  const PairShape sh(qs, ks, base);
  const int64_t len = sh.len, nq = sh.nq, nk = sh.nk, D = base.D, group = base.Hq / base.Hkv;
  const auto end = [](int64_t e, int64_t n) { return e < 0 ? n : e; };
  const int64_t j1 = end(part.last, nk), b1 = end(part.b1, base.B), g1 = end(part.g1, base.Hkv);
  PX_CHECK(0 <= part.first && part.first <= j1 && j1 <= nk && 0 <= part.b0 && part.b0 <= b1 &&
               b1 <= base.B && 0 <= part.g0 && part.g0 <= g1 && g1 <= base.Hkv,
           "chunk attention: key chunks [{}, {}) of {}, batch entries [{}, {}) of {}, kv heads "
           "[{}, {}) of {}",
           part.first, part.last, nk, part.b0, part.b1, base.B, part.g0, part.g1, base.Hkv);
  // The part as a call of its own: its batch entries and heads, with the
  // global indices that dropout and the document mask key on.
  ops::AttnDims pb = base;
  pb.B = b1 - part.b0;
  pb.Hkv = g1 - part.g0;
  pb.Hq = pb.Hkv * group;
  pb.sample0 += part.b0;
  pb.head0 += part.g0 * group;
  if (pb.doc_start != nullptr) pb.doc_start += part.b0 * pb.doc_ld;
  // The whole call's choice of thread split, so that every part sums alike.
  const ops::AttnBwdSplit split =
      ops::attention_backward_auto_split(ops::Stream::host(), pair_dims(base, len, 0, 0));
  const Window qwin{part.b0, b1, part.g0 * group * D, pb.Hq * D};
  const Window kwin{part.b0, b1, part.g0 * D, pb.Hkv * D};
  const int64_t B = pb.B, qw = qwin.w, kw = kwin.w;
  std::vector<float> qt(B * len * qw), ot(B * len * qw), dot(B * len * qw), dqt(B * len * qw),
      lt(B * pb.Hq * len);
  std::vector<float> kt(B * len * kw), vt(B * len * kw), dkt(B * len * kw), dvt(B * len * kw);
  for (int64_t j = part.first; j < j1; ++j) {
    bool any = false;
    for (int64_t i = 0; i < nq; ++i) {
      if (fully_masked(pb, qs.pos0[i], ks.pos0[j], len)) continue;
      if (!any) {
        get_chunk(kt.data(), k, nk, len, sh.krow, j, kwin);
        get_chunk(vt.data(), v, nk, len, sh.krow, j, kwin);
        std::fill(dkt.begin(), dkt.end(), 0.0f);
        std::fill(dvt.begin(), dvt.end(), 0.0f);
        any = true;
      }
      get_chunk(qt.data(), q, nq, len, sh.qrow, i, qwin);
      get_chunk(ot.data(), out, nq, len, sh.qrow, i, qwin);
      get_chunk(dot.data(), dout, nq, len, sh.qrow, i, qwin);
      get_lse(lt.data(), lse, base.Hq, nq, len, i, part.b0, b1, part.g0 * group, g1 * group);
      std::fill(dqt.begin(), dqt.end(), 0.0f);
      ops::AttnDims d = pair_dims(pb, len, qs.pos0[i], ks.pos0[j]);
      if (progress) d.progress = &progress;
      ops::attention_backward(ops::Stream::host(), dqt.data(), dkt.data(), dvt.data(), dot.data(),
                              qt.data(), kt.data(), vt.data(), ot.data(), lt.data(), d, scale,
                              split);
      add_chunk(dq, dqt.data(), nq, len, sh.qrow, i, qwin);
      if (progress) progress();
    }
    if (any) {
      add_chunk(dk, dkt.data(), nk, len, sh.krow, j, kwin);
      add_chunk(dv, dvt.data(), nk, len, sh.krow, j, kwin);
    }
  }
}

}  // namespace parallm
