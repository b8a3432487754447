// The chunk pairs of chunk_attention.h. Chunks are copied into contiguous
// (B, len, H, D) tiles because the kernel's rows of one batch entry are
// contiguous; the copies are O(len) per chunk against O(len^2) attention.
// Tiles, copies, adds and the merge are ops on the rows' device; which
// pairs to skip is decided on the host (a host copy of the document starts).
#include "parallel/context/chunk_attention.h"

#include <limits>

#include "base/error.h"
#include "nn/op_buffers.h"
#include "ops/activation.h"
#include "ops/copy.h"
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
void get_chunk(const ops::Stream& st, float* tile, const float* x, int64_t n, int64_t len,
               int64_t row, int64_t c, const Window& win) {
  for (int64_t b = win.b0; b < win.b1; ++b) {
    const float* src = x + (b * n + c) * len * row + win.col;
    float* dst = tile + (b - win.b0) * len * win.w;
    if (win.w == row) {
      ops::copy(st, dst, src, static_cast<size_t>(len * row) * sizeof(float));
      continue;
    }
    for (int64_t t = 0; t < len; ++t)
      ops::copy(st, dst + t * win.w, src + t * row, static_cast<size_t>(win.w) * sizeof(float));
  }
}
void add_chunk(const ops::Stream& st, float* x, const float* tile, int64_t n, int64_t len,
               int64_t row, int64_t c, const Window& win) {
  for (int64_t b = win.b0; b < win.b1; ++b) {
    float* dst = x + (b * n + c) * len * row + win.col;
    const float* src = tile + (b - win.b0) * len * win.w;
    if (win.w == row) {
      ops::add_inplace(st, dst, src, len * row);
      continue;
    }
    for (int64_t t = 0; t < len; ++t) ops::add_inplace(st, dst + t * row, src + t * win.w, win.w);
  }
}
// lse (B, H, n*len) -> tile (b1 - b0, h1 - h0, len) of chunk c.
void get_lse(const ops::Stream& st, float* tile, const float* lse, int64_t H, int64_t n,
             int64_t len, int64_t c, int64_t b0, int64_t b1, int64_t h0, int64_t h1) {
  for (int64_t b = b0; b < b1; ++b)
    for (int64_t h = h0; h < h1; ++h)
      ops::copy(st, tile + ((b - b0) * (h1 - h0) + h - h0) * len,
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
// the earliest. docs: a host copy of d.doc_start (null: no documents).
bool fully_masked(const ops::AttnDims& d, const int64_t* docs, int64_t q0, int64_t k0,
                  int64_t len) {
  if (k0 > q0 + len - 1) return true;
  if (d.window > 0 && k0 + len - 1 <= q0 - d.window) return true;
  if (docs == nullptr) return false;
  for (int64_t b = 0; b < d.B; ++b)
    if (k0 + len - 1 >= docs[b * d.doc_ld + q0]) return false;
  return true;
}

// The host's view of the document starts the pairs are skipped by.
HostView<const int64_t> host_docs(const ops::Stream& st, const ops::AttnDims& d) {
  return HostView<const int64_t>(st, d.doc_start, d.doc_start != nullptr ? d.B * d.doc_ld : 0);
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

void chunk_attention_init(const ops::Stream& st, float* out, float* lse, int64_t B, int64_t tokens,
                          int64_t Hq, int64_t D) {
  ops::zero(st, out, static_cast<size_t>(B * tokens * Hq * D) * sizeof(float));
  ops::fill(st, lse, B * Hq * tokens, kNegInf);
}

void chunk_attention_forward(const ops::Stream& st, Allocator& a, float* out, float* lse,
                             const float* q, const ChunkSet& qs, const float* k, const float* v,
                             const ChunkSet& ks, const ops::AttnDims& base, double scale,
                             AttnWork* work, const std::function<void()>& progress) {
  const PairShape sh(qs, ks, base);
  const int64_t B = sh.B, Hq = sh.Hq, D = base.D, len = sh.len, nq = sh.nq, nk = sh.nk;
  const int64_t qrow = sh.qrow, krow = sh.krow;
  const OpScratch scratch(st, a);
  const Tensor qt = scratch.floats(B * len * qrow), ot = scratch.floats(B * len * qrow),
               lt = scratch.floats(B * Hq * len);
  const Tensor kt = scratch.floats(B * len * krow), vt = scratch.floats(B * len * krow);
  const HostView<const int64_t> docs = host_docs(st, base);
  const Window qwin{0, B, 0, qrow}, kwin{0, B, 0, krow};
  for (int64_t j = 0; j < nk; ++j) {
    bool loaded = false;
    for (int64_t i = 0; i < nq; ++i) {
      if (fully_masked(base, docs.get(), qs.pos0[i], ks.pos0[j], len)) continue;
      if (!loaded) {
        get_chunk(st, kt.data<float>(), k, nk, len, krow, j, kwin);
        get_chunk(st, vt.data<float>(), v, nk, len, krow, j, kwin);
        loaded = true;
      }
      get_chunk(st, qt.data<float>(), q, nq, len, qrow, i, qwin);
      ops::AttnDims d = pair_dims(base, len, qs.pos0[i], ks.pos0[j]);
      if (progress) d.progress = &progress;
      ops::attention_forward(st, ot.data<float>(), lt.data<float>(), qt.data<float>(),
                             kt.data<float>(), vt.data<float>(), d, scale);
      if (work) work->pairs += B * Hq * causal_pairs(qs.pos0[i], ks.pos0[j], len);
      if (progress) progress();
      ops::attention_merge(st, out, lse, ot.data<float>(), lt.data<float>(), B, Hq, D, nq, len, i);
    }
  }
}

void chunk_attention_backward(const ops::Stream& st, Allocator& a, float* dq, float* dk, float* dv,
                              const float* dout, const float* q, const ChunkSet& qs, const float* k,
                              const float* v, const ChunkSet& ks, const float* out,
                              const float* lse, const ops::AttnDims& base, double scale,
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
      ops::attention_backward_auto_split(st, pair_dims(base, len, 0, 0));
  const Window qwin{part.b0, b1, part.g0 * group * D, pb.Hq * D};
  const Window kwin{part.b0, b1, part.g0 * D, pb.Hkv * D};
  const int64_t B = pb.B, qw = qwin.w, kw = kwin.w;
  const OpScratch scratch(st, a);
  const auto t = [&](int64_t n) { return scratch.floats(n); };
  const Tensor qt = t(B * len * qw), ot = t(B * len * qw), dot = t(B * len * qw),
               dqt = t(B * len * qw), lt = t(B * pb.Hq * len);
  const Tensor kt = t(B * len * kw), vt = t(B * len * kw), dkt = t(B * len * kw),
               dvt = t(B * len * kw);
  const size_t kbytes = static_cast<size_t>(B * len * kw) * sizeof(float);
  const HostView<const int64_t> docs = host_docs(st, pb);
  for (int64_t j = part.first; j < j1; ++j) {
    bool any = false;
    for (int64_t i = 0; i < nq; ++i) {
      if (fully_masked(pb, docs.get(), qs.pos0[i], ks.pos0[j], len)) continue;
      if (!any) {
        get_chunk(st, kt.data<float>(), k, nk, len, sh.krow, j, kwin);
        get_chunk(st, vt.data<float>(), v, nk, len, sh.krow, j, kwin);
        ops::zero(st, dkt.data<float>(), kbytes);
        ops::zero(st, dvt.data<float>(), kbytes);
        any = true;
      }
      get_chunk(st, qt.data<float>(), q, nq, len, sh.qrow, i, qwin);
      get_chunk(st, ot.data<float>(), out, nq, len, sh.qrow, i, qwin);
      get_chunk(st, dot.data<float>(), dout, nq, len, sh.qrow, i, qwin);
      get_lse(st, lt.data<float>(), lse, base.Hq, nq, len, i, part.b0, b1, part.g0 * group,
              g1 * group);
      ops::zero(st, dqt.data<float>(), static_cast<size_t>(B * len * qw) * sizeof(float));
      ops::AttnDims d = pair_dims(pb, len, qs.pos0[i], ks.pos0[j]);
      if (progress) d.progress = &progress;
      ops::attention_backward(st, dqt.data<float>(), dkt.data<float>(), dvt.data<float>(),
                              dot.data<float>(), qt.data<float>(), kt.data<float>(),
                              vt.data<float>(), ot.data<float>(), lt.data<float>(), d, scale,
                              split);
      add_chunk(st, dq, dqt.data<float>(), nq, len, sh.qrow, i, qwin);
      if (progress) progress();
    }
    if (any) {
      add_chunk(st, dk, dkt.data<float>(), nk, len, sh.krow, j, kwin);
      add_chunk(st, dv, dvt.data<float>(), nk, len, sh.krow, j, kwin);
    }
  }
}

}  // namespace parallm
