// The Direct path of CPU paged attention (decode, few query rows): one task
// per (sequence, key tile of whole blocks) computes every query row and head
// of its sequence over the tile, reading the tile's tokens in pool order, and
// leaves each row's tile softmax (max, sum, unnormalised output) in its own
// slots; merge_rows combines a row's tiles in tile order. Invariant: a row's
// result depends only on its own sequence's keys, values and position (not on
// the batch, the thread count or how its sequence was chunked). Over 16-bit
// pools each token row is widened into a small f32 buffer (L1) as the walk
// reaches it, once for all heads, and everything after is the f32 code.
#include <cmath>
#include <limits>
#include <utility>

#include "kernels/cpu/paged_attention_parts.h"

#ifdef __AVX2__
#include <immintrin.h>
#endif

namespace parallm::cpu::paged {
namespace {

// One tile's softmax of a row's scores s[0, c): m = their max, s = exp(s - m),
// l = their sum.
template <class T>
void tile_softmax(T* s, int64_t c, T& m, double& l) {
  m = exp_shifted(s, c, -std::numeric_limits<T>::infinity(), l);
}

// Keys per inner step of the Direct path: four key rows in flight hide
// memory latency that one dot product at a time leaves exposed.
constexpr int64_t kLanes = 4;
// How far ahead of the loops key (and value) rows are prefetched.
constexpr int64_t kPrefetchKeys = 8;

template <class T>
void prefetch_row(const T* p, int64_t n) {
  for (int64_t b = 0; b < n * static_cast<int64_t>(sizeof(T)); b += 64)
    __builtin_prefetch(reinterpret_cast<const char*>(p) + b);
}

// out[l] = q . k_l for the four rows k0..k3.
template <class T>
inline void dot4_loop(T* out, const T* q, const T* __restrict k0, const T* __restrict k1,
                      const T* __restrict k2, const T* __restrict k3, int64_t n) {
  T s0 = 0, s1 = 0, s2 = 0, s3 = 0;
#pragma omp simd reduction(+ : s0, s1, s2, s3)
  for (int64_t e = 0; e < n; ++e) {
    const T x = q[e];
    s0 += x * k0[e];
    s1 += x * k1[e];
    s2 += x * k2[e];
    s3 += x * k3[e];
  }
  out[0] = s0;
  out[1] = s1;
  out[2] = s2;
  out[3] = s3;
}

template <class T>
[[gnu::noinline]] void dot4(T* out, const T* q, const T* __restrict k0, const T* __restrict k1,
                            const T* __restrict k2, const T* __restrict k3, int64_t n) {
  dot4_loop(out, q, k0, k1, k2, k3, n);
}

#ifdef __AVX2__
// The float rows of a multiple of 8: one 8-wide accumulator per key, summed
// across lanes for all four at once (three horizontal adds), where the
// generic loop reduces each of the four on its own.
template <>
[[gnu::noinline]] void dot4<float>(float* out, const float* q, const float* __restrict k0,
                                   const float* __restrict k1, const float* __restrict k2,
                                   const float* __restrict k3, int64_t n) {
  if (n % 8 != 0) {
    dot4_loop(out, q, k0, k1, k2, k3, n);
    return;
  }
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  for (int64_t e = 0; e < n; e += 8) {
    const __m256 x = _mm256_loadu_ps(q + e);
    a0 = _mm256_fmadd_ps(x, _mm256_loadu_ps(k0 + e), a0);
    a1 = _mm256_fmadd_ps(x, _mm256_loadu_ps(k1 + e), a1);
    a2 = _mm256_fmadd_ps(x, _mm256_loadu_ps(k2 + e), a2);
    a3 = _mm256_fmadd_ps(x, _mm256_loadu_ps(k3 + e), a3);
  }
  // [a0 a1 a2 a3 of lanes 0-3 | of lanes 4-7], then the halves added.
  const __m256 h = _mm256_hadd_ps(_mm256_hadd_ps(a0, a1), _mm256_hadd_ps(a2, a3));
  _mm_storeu_ps(out, _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1)));
}
#endif

template <class T>
[[gnu::noinline]] T dot(const T* a, const T* b, int64_t n) {
  T r = 0;
#pragma omp simd reduction(+ : r)
  for (int64_t e = 0; e < n; ++e) r += a[e] * b[e];
  return r;
}

// y += p[0] v0 + p[1] v1 + p[2] v2 + p[3] v3.
template <class T>
[[gnu::noinline]] void axpy4(T* __restrict y, const T* p, const T* __restrict v0,
                             const T* __restrict v1, const T* __restrict v2, const T* __restrict v3,
                             int64_t n) {
  const T a0 = p[0], a1 = p[1], a2 = p[2], a3 = p[3];
#pragma omp simd
  for (int64_t e = 0; e < n; ++e) y[e] += a0 * v0[e] + a1 * v1[e] + a2 * v2[e] + a3 * v3[e];
}

template <class T>
[[gnu::noinline]] void axpy(T* __restrict y, T a, const T* __restrict x, int64_t n) {
#pragma omp simd
  for (int64_t e = 0; e < n; ++e) y[e] += a * x[e];
}

}  // namespace

// Direct path: one task per (sequence, key tile) serves every query row
// and head of its sequence, so the tile's keys stream from memory in order
// (all kv heads of a token are adjacent in the pool) and a lone decoding
// sequence still spreads over the threads. A task leaves each row's softmax
// state over its tile (max, sum, unnormalised output) in its own slots;
// merge_rows combines a row's tiles in tile order. Row r handles its own
// visible keys only, in groups at fixed offsets of the tile whatever the
// other rows see, so its result does not depend on them, on the thread
// count or on how its sequence was chunked.
template <class T, class KV>
void split_task(const SplitTask& t, const PagedSeq& s, const Geometry& G, const T* q, const KV* kp,
                const KV* vp, T scale, Partials<T>& P, Workspace<T>& w) {
  const int64_t D = G.d.D, Hq = G.d.Hq, nq = s.Tq, tile = G.split_tile;
  const int64_t row_elems = G.d.Hkv * D, R = nq * Hq;
  std::fill_n(&P.m[t.slot], R, -std::numeric_limits<T>::infinity());
  std::fill_n(&P.l[t.slot], R, 0.0);
  std::fill_n(&P.acc[t.slot * D], R * D, T(0));
  w.a.resize(static_cast<size_t>(nq));
  w.c.resize(static_cast<size_t>(nq));
  int64_t amin = t.tk, cmax = 0;
  for (int64_t i = 0; i < nq; ++i) {
    const int64_t pos = s.q_pos0 + i;
    w.a[i] = std::clamp<int64_t>(G.first(pos) - t.j0, 0, t.tk);
    w.c[i] = std::clamp<int64_t>(pos + 1 - t.j0, 0, t.tk);
    if (w.c[i] > w.a[i]) {
      amin = std::min(amin, w.a[i]);
      cmax = std::max(cmax, w.c[i]);
    }
  }
  if (cmax <= amin) return;  // the slots keep m = -inf, l = 0
  if (w.s.size() < static_cast<size_t>(R * tile)) w.s.resize(static_cast<size_t>(R * tile));
  const int64_t jstart = amin / kLanes * kLanes;
  // Row i's lanes [lo, hi) of the group at tile key j (all of them: the fast path).
  auto lanes = [&](int64_t i, int64_t j, int64_t nl) {
    return std::pair<int64_t, int64_t>{std::max<int64_t>(0, w.a[i] - j), std::min(nl, w.c[i] - j)};
  };
  auto token = [&](const KV* pool, int64_t j) { return pool + G.k_off(s, t.j0 + j, 0); };
  constexpr bool widen = !std::is_same_v<KV, T>;
  if constexpr (widen) w.wide.resize(static_cast<size_t>(kLanes * row_elems));
  // Walks the tile's keys in groups of kLanes, token rows in pool order
  // (prefetched kPrefetchKeys ahead), and calls visit(i, h, j, lo, hi, rows)
  // for every query row i that sees some of the group at tile key j (lanes
  // [lo, hi)) and every head h, rows[l] pointing at key j + l's values of
  // h's kv head.
  auto walk = [&](const KV* pool, auto&& visit) {
    const T* tok[kLanes];
    const T* rows[kLanes];
    for (int64_t j = jstart; j < cmax; j += kLanes) {
      const int64_t nl = std::min(kLanes, cmax - j);
      for (int64_t l = 0; l < nl; ++l) {
        if constexpr (widen) {
          load_row(&w.wide[l * row_elems], token(pool, j + l), row_elems, G.lowp);
          tok[l] = &w.wide[l * row_elems];
        } else {
          tok[l] = token(pool, j + l);
        }
        if (j + l + kPrefetchKeys < cmax)
          prefetch_row(token(pool, j + l + kPrefetchKeys), row_elems);
      }
      for (int64_t i = 0; i < nq; ++i) {
        const auto [lo, hi] = lanes(i, j, nl);
        if (hi <= lo) continue;
        for (int64_t h = 0; h < Hq; ++h) {
          for (int64_t l = 0; l < nl; ++l) rows[l] = tok[l] + h / G.group * D;
          visit(i, h, j, lo, hi, rows);
        }
      }
    }
  };
  walk(kp, [&](int64_t i, int64_t h, int64_t j, int64_t lo, int64_t hi, const T* const* k) {
    const T* qr = q + (t.row0 + i) * G.ldq + h * D;
    T* sr = &w.s[(i * Hq + h) * tile + j];
    if (lo == 0 && hi == kLanes) {
      dot4(sr, qr, k[0], k[1], k[2], k[3], D);
      for (int64_t l = 0; l < kLanes; ++l) sr[l] *= scale;
    } else {
      for (int64_t l = lo; l < hi; ++l) sr[l] = scale * dot(qr, k[l], D);
    }
  });
  for (int64_t i = 0; i < nq; ++i) {
    if (w.c[i] <= w.a[i]) continue;
    for (int64_t h = 0; h < Hq; ++h) {
      const int64_t r = i * Hq + h, slot = t.slot + r;
      tile_softmax(&w.s[r * tile + w.a[i]], w.c[i] - w.a[i], P.m[slot], P.l[slot]);
    }
  }
  walk(vp, [&](int64_t i, int64_t h, int64_t j, int64_t lo, int64_t hi, const T* const* v) {
    const int64_t r = i * Hq + h;
    T* a = &P.acc[(t.slot + r) * D];
    const T* p = &w.s[r * tile + j];
    if (lo == 0 && hi == kLanes) {
      axpy4(a, p, v[0], v[1], v[2], v[3], D);
    } else {
      for (int64_t l = lo; l < hi; ++l) axpy(a, p[l], v[l], D);
    }
  });
}

// Combines the tiles of one sequence's rows (tasks [p0, p1), in tile order)
// into out and lse: out = sum_t e^(m_t - M) acc_t / sum_t e^(m_t - M) l_t.
template <class T>
void merge_rows(const SplitMerge& mg, const std::vector<SplitTask>& splits, const Geometry& G,
                const Partials<T>& P, T* out, T* lse) {
  const int64_t D = G.d.D, Hq = G.d.Hq;
  for (int64_t r = 0; r < mg.rows; ++r) {
    T M = -std::numeric_limits<T>::infinity();
    for (int64_t p = mg.p0; p < mg.p1; ++p)
      if (P.l[splits[p].slot + r] > 0.0) M = std::max(M, P.m[splits[p].slot + r]);
    T* o = out + (mg.row0 + r / Hq) * G.ldq + r % Hq * D;
    std::fill_n(o, D, T(0));
    double l = 0.0;
    for (int64_t p = mg.p0; p < mg.p1; ++p) {
      const int64_t slot = splits[p].slot + r;
      if (P.l[slot] <= 0.0) continue;
      const T wgt = exp_t<T>(P.m[slot] - M);  // 1 for the tile holding the maximum
      l += P.l[slot] * static_cast<double>(wgt);
      axpy(o, wgt, &P.acc[slot * D], D);
    }
    // Every query sees at least its own key, so l > 0; the guard keeps a bad
    // table from dividing by zero silently.
    const T inv = l > 0.0 ? static_cast<T>(1.0 / l) : T(0);
#pragma omp simd
    for (int64_t e = 0; e < D; ++e) o[e] *= inv;
    if (lse != nullptr)
      lse[(mg.row0 + r / Hq) * Hq + r % Hq] =
          l > 0.0 ? static_cast<T>(static_cast<double>(M) + std::log(l))
                  : -std::numeric_limits<T>::infinity();
  }
}

#define PARALLM_INSTANTIATE_DIRECT(T, KV)                                                        \
  template void split_task<T, KV>(const SplitTask&, const PagedSeq&, const Geometry&, const T*,  \
                                  const KV*, const KV*, T, Partials<T>&, Workspace<T>&);
PARALLM_INSTANTIATE_DIRECT(float, float)
PARALLM_INSTANTIATE_DIRECT(double, double)
PARALLM_INSTANTIATE_DIRECT(float, uint16_t)
#undef PARALLM_INSTANTIATE_DIRECT
template void merge_rows<float>(const SplitMerge&, const std::vector<SplitTask>&, const Geometry&,
                                const Partials<float>&, float*, float*);
template void merge_rows<double>(const SplitMerge&, const std::vector<SplitTask>&, const Geometry&,
                                 const Partials<double>&, double*, double*);

}  // namespace parallm::cpu::paged
