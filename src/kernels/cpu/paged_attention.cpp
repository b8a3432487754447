// Paged attention on CPU (see paged_attention.h). Work is cut into tasks of
// (sequence, kv head, its query heads or one of them, block of query rows);
// a task walks the visible keys in tiles of whole blocks (from the tile that
// holds its first row's window start), keeping per query
// row a running max m, a running sum l and an unnormalised output, rescaled
// when m grows. Invariant: a query row's result depends only on its own
// sequence's data, position and Tq (never on the rest of the batch, the
// thread count or how heads were split into tasks).
#include "kernels/cpu/paged_attention.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "base/error.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/vec_math.h"

namespace parallm::cpu {
namespace {

// Keys per online-softmax step (rounded to whole blocks): long enough that
// rescaling the output is rare, short enough that the tile stays in L1/L2.
constexpr int64_t kKeyTile = 128;
// Query rows (positions) per task on the Gemm path, as in attention.cpp.
constexpr int64_t kQueryBlock = 64;
// Auto takes the Gemm path from this many query positions of a sequence:
// below it a GEMM's setup and the tile copy cost more than direct loops
// (measured crossover between 2 and 4 at D=64, GQA group 3).
constexpr int64_t kGemmMinRows = 4;
// Below this many multiply-adds a call runs on one thread (see attention.cpp),
// unless it reads this many bytes of keys and values: decode (one query row
// per head over a long cache) is bound by memory, which two cores read
// faster than one.
constexpr double kMinParallelFlops = 1e6;
constexpr double kMinParallelBytes = 256 << 10;

struct Task {
  int64_t seq, row0;  // the sequence and its first row in q
  int64_t i0, i1;     // its query rows [i0, i1)
  int64_t g, h0, h1;  // kv head and query heads [h0, h1)
  bool gemm;
};

struct Geometry {
  const PagedAttnDims& d;
  int64_t group, ldq, ldk, tile;
  // The first key position that the query at position pos sees.
  int64_t first(int64_t pos) const {
    return d.window > 0 ? std::max<int64_t>(0, pos - d.window + 1) : 0;
  }
  int64_t k_off(const PagedSeq& s, int64_t j, int64_t g) const {
    const int64_t phys = s.blocks[j / d.block_size];
    return ((phys * d.block_size + j % d.block_size) * d.Hkv + g) * d.D;
  }
};

template <class T>
struct Workspace {
  std::vector<T> s, acc, m, kt, vt;
  std::vector<double> l;
  std::vector<int64_t> a, c;  // each row sees keys [a, c) of the current tile
};

// The running softmax state of one row over tile scores s[0, c): rescales
// acc by exp(m_old - m_new), replaces s by exp(s - m_new), updates m and l.
// Non-inlined: inside the OpenMP outlined loop GCC 12 leaves it scalar.
template <class T>
[[gnu::noinline]] void online_update(T* s, int64_t c, T& m, double& l, T* acc, int64_t D) {
  T mx = s[0];
#pragma omp simd reduction(max : mx)
  for (int64_t j = 0; j < c; ++j) mx = s[j] > mx ? s[j] : mx;
  const T m_new = std::max(m, mx);
#pragma omp simd
  for (int64_t j = 0; j < c; ++j) s[j] = exp_t<T>(s[j] - m_new);
  double sum = 0.0;
#pragma omp simd reduction(+ : sum)
  for (int64_t j = 0; j < c; ++j) sum += s[j];
  if (m_new > m) {
    const T alpha = exp_t<T>(m - m_new);  // 0 on the first tile (m = -inf)
    l *= static_cast<double>(alpha);
#pragma omp simd
    for (int64_t e = 0; e < D; ++e) acc[e] *= alpha;
    m = m_new;
  }
  l += sum;
}

// Keys per inner step of the Direct path: four independent rows in flight
// hide memory latency that one dot product at a time leaves exposed (the
// key rows of one kv head are Hkv * D apart, so the hardware prefetcher
// barely helps).
constexpr int64_t kLanes = 4;
// How far ahead of the scores loop keys are prefetched.
constexpr int64_t kPrefetchKeys = 8;

template <class T>
void prefetch_row(const T* p, int64_t n) {
  for (int64_t b = 0; b < n * static_cast<int64_t>(sizeof(T)); b += 64)
    __builtin_prefetch(reinterpret_cast<const char*>(p) + b);
}

// out[l] = q . k_l for the four rows k0..k3.
template <class T>
[[gnu::noinline]] void dot4(T* out, const T* q, const T* __restrict k0, const T* __restrict k1,
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

// Tile keys [a[r], c[r]) that row r (query i0 + r % nq) sees, for tile
// keys j0 .. j0 + tk - 1; returns the union [amin, cmax) (empty: cmax 0).
template <class T>
std::pair<int64_t, int64_t> tile_rows(const Task& t, const PagedSeq& s, const Geometry& G,
                                      int64_t R, int64_t j0, int64_t tk, Workspace<T>& w) {
  const int64_t nq = t.i1 - t.i0;
  int64_t amin = tk, cmax = 0;
  for (int64_t r = 0; r < R; ++r) {
    const int64_t pos = s.q_pos0 + t.i0 + r % nq;
    w.a[r] = std::clamp<int64_t>(G.first(pos) - j0, 0, tk);
    w.c[r] = std::clamp<int64_t>(pos + 1 - j0, 0, tk);
    if (w.c[r] > w.a[r]) {
      amin = std::min(amin, w.a[r]);
      cmax = std::max(cmax, w.c[r]);
    }
  }
  return {amin, cmax};
}

// Direct path: keys four at a time, each group used by every row of the
// task while it is in cache (the group's query heads share it under GQA).
// Row r handles its own visible keys only, in groups at fixed offsets of
// the tile whatever the other rows see, so its result does not depend on them.
template <class T>
void task_direct(const Task& t, const PagedSeq& s, const Geometry& G, const T* q, const T* kp,
                 const T* vp, T scale, int64_t kbeg, int64_t kend, Workspace<T>& w) {
  const int64_t D = G.d.D, nq = t.i1 - t.i0, R = (t.h1 - t.h0) * nq;
  auto qrow = [&](int64_t r) { return q + (t.row0 + t.i0 + r % nq) * G.ldq + (t.h0 + r / nq) * D; };
  // Row r's lanes [lo, hi) of the group at tile key j (all of them: the fast path).
  auto lanes = [&](int64_t r, int64_t j, int64_t nl) {
    return std::pair<int64_t, int64_t>{std::max<int64_t>(0, w.a[r] - j), std::min(nl, w.c[r] - j)};
  };
  const T* kr[kLanes];
  const T* vr[kLanes];
  for (int64_t j0 = kbeg; j0 < kend; j0 += G.tile) {
    const int64_t tk = std::min(G.tile, kend - j0);
    const auto [amin, cmax] = tile_rows(t, s, G, R, j0, tk, w);
    const int64_t jstart = amin / kLanes * kLanes;
    for (int64_t j = jstart; j < cmax; j += kLanes) {
      const int64_t nl = std::min(kLanes, cmax - j);
      for (int64_t l = 0; l < nl; ++l) {
        kr[l] = kp + G.k_off(s, j0 + j + l, t.g);
        prefetch_row(vp + G.k_off(s, j0 + j + l, t.g), D);  // read after the scores
        if (j + l + kPrefetchKeys < cmax)
          prefetch_row(kp + G.k_off(s, j0 + j + l + kPrefetchKeys, t.g), D);
      }
      for (int64_t r = 0; r < R; ++r) {
        T* sr = &w.s[r * G.tile + j];
        const auto [lo, hi] = lanes(r, j, nl);
        if (lo == 0 && hi == kLanes) {
          dot4(sr, qrow(r), kr[0], kr[1], kr[2], kr[3], D);
          for (int64_t l = 0; l < kLanes; ++l) sr[l] *= scale;
        } else {
          for (int64_t l = lo; l < hi; ++l) sr[l] = scale * dot(qrow(r), kr[l], D);
        }
      }
    }
    for (int64_t r = 0; r < R; ++r)
      if (w.c[r] > w.a[r])
        online_update(&w.s[r * G.tile + w.a[r]], w.c[r] - w.a[r], w.m[r], w.l[r], &w.acc[r * D], D);
    for (int64_t j = jstart; j < cmax; j += kLanes) {
      const int64_t nl = std::min(kLanes, cmax - j);
      for (int64_t l = 0; l < nl; ++l) vr[l] = vp + G.k_off(s, j0 + j + l, t.g);
      for (int64_t r = 0; r < R; ++r) {
        T* a = &w.acc[r * D];
        const T* p = &w.s[r * G.tile + j];
        const auto [lo, hi] = lanes(r, j, nl);
        if (lo == 0 && hi == kLanes) {
          axpy4(a, p, vr[0], vr[1], vr[2], vr[3], D);
        } else {
          for (int64_t l = lo; l < hi; ++l) axpy(a, p[l], vr[l], D);
        }
      }
    }
  }
}

// Gemm path: copy the tile's keys and values of kv head g that some row
// sees into contiguous (kn, D) buffers, then per query head one GEMM for the
// scores and one for P.V into the running output.
template <class T>
void task_gemm(const Task& t, const PagedSeq& s, const Geometry& G, const T* q, const T* kp,
               const T* vp, T scale, int64_t kbeg, int64_t kend, Workspace<T>& w) {
  const int64_t D = G.d.D, nq = t.i1 - t.i0;
  for (int64_t j0 = kbeg; j0 < kend; j0 += G.tile) {
    const int64_t tk = std::min(G.tile, kend - j0);
    // The query heads share the rows' visible ranges (those of head t.h0);
    // only keys [lo, hi), which some row sees, are read.
    const auto [lo, hi] = tile_rows(t, s, G, nq, j0, tk, w);
    if (hi <= lo) continue;
    const int64_t kn = hi - lo;
    for (int64_t j = 0; j < kn; ++j) {
      const int64_t off = G.k_off(s, j0 + lo + j, t.g);
      std::copy_n(kp + off, D, &w.kt[j * D]);
      std::copy_n(vp + off, D, &w.vt[j * D]);
    }
    for (int64_t h = t.h0; h < t.h1; ++h) {
      const int64_t r0 = (h - t.h0) * nq;
      gemm(false, true, nq, kn, D, scale, q + (t.row0 + t.i0) * G.ldq + h * D, G.ldq, w.kt.data(),
           D, T(0), w.s.data(), kn);
      for (int64_t i = 0; i < nq; ++i) {
        T* row = &w.s[i * kn];
        if (w.c[i] <= w.a[i]) {  // nothing visible in this tile
          std::fill_n(row, kn, T(0));
          continue;
        }
        const int64_t a = w.a[i] - lo, c = w.c[i] - lo;
        online_update(row + a, c - a, w.m[r0 + i], w.l[r0 + i], &w.acc[(r0 + i) * D], D);
        std::fill(row, row + a, T(0));  // masked keys add nothing to P.V
        std::fill(row + c, row + kn, T(0));
      }
      gemm(false, false, nq, D, kn, T(1), w.s.data(), kn, w.vt.data(), D, T(1), &w.acc[r0 * D], D);
    }
  }
}

template <class T>
void run_task(const Task& t, const PagedSeq& s, const Geometry& G, T* out, T* lse, const T* q,
              const T* kp, const T* vp, T scale, Workspace<T>& w) {
  const int64_t D = G.d.D, nq = t.i1 - t.i0, R = (t.h1 - t.h0) * nq;
  const int64_t kend = s.q_pos0 + t.i1;  // the last row sees the latest keys
  // ... and the first the earliest; tiles stay at multiples of G.tile, so a
  // row's tiles do not depend on the task's other rows.
  const int64_t kbeg = G.first(s.q_pos0 + t.i0) / G.tile * G.tile;
  w.acc.assign(static_cast<size_t>(R * D), T(0));
  w.m.assign(static_cast<size_t>(R), -std::numeric_limits<T>::infinity());
  w.l.assign(static_cast<size_t>(R), 0.0);
  w.a.assign(static_cast<size_t>(R), 0);
  w.c.assign(static_cast<size_t>(R), 0);
  const size_t srows = static_cast<size_t>(t.gemm ? nq : R);
  if (w.s.size() < srows * G.tile) w.s.resize(srows * G.tile);
  if (t.gemm && w.kt.size() < static_cast<size_t>(G.tile * D)) {
    w.kt.resize(static_cast<size_t>(G.tile * D));
    w.vt.resize(static_cast<size_t>(G.tile * D));
  }
  if (t.gemm)
    task_gemm(t, s, G, q, kp, vp, scale, kbeg, kend, w);
  else
    task_direct(t, s, G, q, kp, vp, scale, kbeg, kend, w);
  for (int64_t r = 0; r < R; ++r) {
    const int64_t row = t.row0 + t.i0 + r % nq, h = t.h0 + r / nq;
    T* o = out + row * G.ldq + h * D;
    const double l = w.l[static_cast<size_t>(r)];
    // Every query sees at least its own key, so l > 0; the guard keeps a bad
    // table from dividing by zero silently.
    const T inv = l > 0.0 ? static_cast<T>(1.0 / l) : T(0);
    const T* a = &w.acc[r * D];
#pragma omp simd
    for (int64_t e = 0; e < D; ++e) o[e] = a[e] * inv;
    if (lse != nullptr)
      lse[row * G.d.Hq + h] = l > 0.0 ? static_cast<T>(static_cast<double>(w.m[r]) + std::log(l))
                                      : -std::numeric_limits<T>::infinity();
  }
}

void check_inputs(const PagedSeq* seqs, int64_t n_seqs, const PagedAttnDims& d) {
  PX_CHECK(d.D > 0 && d.block_size > 0 && d.num_blocks > 0,
           "paged attention: bad dims D={} block_size={} num_blocks={}", d.D, d.block_size,
           d.num_blocks);
  PX_CHECK(d.Hkv > 0 && d.Hq > 0 && d.Hq % d.Hkv == 0,
           "paged attention: query heads ({}) must be a positive multiple of kv heads ({})", d.Hq,
           d.Hkv);
  PX_CHECK(d.window >= 0, "paged attention: sliding window {} must be >= 0 (0: none)", d.window);
  PX_CHECK(n_seqs >= 0, "paged attention: negative sequence count {}", n_seqs);
  for (int64_t i = 0; i < n_seqs; ++i) {
    const PagedSeq& s = seqs[i];
    PX_CHECK(s.Tq >= 0 && s.q_pos0 >= 0, "paged attention: sequence {} has Tq {} and q_pos0 {}", i,
             s.Tq, s.q_pos0);
    const int64_t need = (s.q_pos0 + s.Tq + d.block_size - 1) / d.block_size;
    PX_CHECK(s.n_blocks >= need,
             "paged attention: sequence {} reaches position {} but its block table has {} blocks "
             "of {} (needs {})",
             i, s.q_pos0 + s.Tq - 1, s.n_blocks, d.block_size, need);
    for (int64_t b = 0; b < need; ++b)
      PX_CHECK(s.blocks[b] >= 0 && s.blocks[b] < d.num_blocks,
               "paged attention: sequence {} block {} is {}, outside the pool [0, {})", i, b,
               s.blocks[b], d.num_blocks);
  }
}

}  // namespace

template <class T>
void paged_attention_forward(T* out, T* lse, const T* q, const T* k_pool, const T* v_pool,
                             const PagedSeq* seqs, int64_t n_seqs, const PagedAttnDims& d,
                             double scale, PagedAttnPath path) {
  check_inputs(seqs, n_seqs, d);
  const int64_t group = d.Hq / d.Hkv;
  const int64_t per_tile = std::max<int64_t>(1, kKeyTile / d.block_size);
  const Geometry G{d, group, d.Hq * d.D, d.Hkv * d.D, per_tile * d.block_size};

  // Tasks: whole GQA groups share each key load; when that leaves threads
  // idle (one sequence decoding with few kv heads), one task per query head.
  std::vector<Task> tasks;
  double flops = 0.0, kv_bytes = 0.0;
  for (int heads_per_task : {static_cast<int>(group), 1}) {
    tasks.clear();
    flops = 0.0;
    kv_bytes = 0.0;
    int64_t row0 = 0;
    for (int64_t i = 0; i < n_seqs; ++i) {
      const PagedSeq& s = seqs[i];
      const bool use_gemm =
          path == PagedAttnPath::Gemm || (path == PagedAttnPath::Auto && s.Tq >= kGemmMinRows);
      const int64_t qb = use_gemm ? kQueryBlock : std::max<int64_t>(s.Tq, 1);
      for (int64_t i0 = 0; i0 < s.Tq; i0 += qb)
        for (int64_t h0 = 0; h0 < d.Hq; h0 += heads_per_task)
          tasks.push_back({i, row0, i0, std::min(s.Tq, i0 + qb), h0 / group, h0,
                           h0 + heads_per_task, use_gemm});
      const int64_t keys = s.q_pos0 + s.Tq - G.first(s.q_pos0);  // that some row reads
      flops += static_cast<double>(d.Hq) * s.Tq * keys * d.D;
      kv_bytes += 2.0 * d.Hkv * keys * d.D * sizeof(T);
      row0 += s.Tq;
    }
    if (heads_per_task == 1 || static_cast<int64_t>(tasks.size()) >= 2 * omp_get_max_threads())
      break;
  }
  const bool parallel =
      (flops >= kMinParallelFlops || kv_bytes >= kMinParallelBytes) && tasks.size() > 1;
  const T sc = static_cast<T>(scale);
#pragma omp parallel if (parallel)
  {
    Workspace<T> w;
#pragma omp for schedule(dynamic, 1)
    for (size_t i = 0; i < tasks.size(); ++i)
      run_task(tasks[i], seqs[tasks[i].seq], G, out, lse, q, k_pool, v_pool, sc, w);
  }
}

template <class T>
void paged_kv_write(T* pool, int64_t num_blocks, int64_t block_size, int64_t row_elems,
                    const int32_t* blocks, int64_t n_blocks, int64_t pos0, int64_t n,
                    const T* src) {
  PX_CHECK(pos0 >= 0 && n >= 0 && block_size > 0, "paged kv write: bad range pos0={} n={}", pos0,
           n);
  const int64_t need = (pos0 + n + block_size - 1) / block_size;
  PX_CHECK(n_blocks >= need,
           "paged kv write: positions up to {} need {} blocks of {}, the table has {}",
           pos0 + n - 1, need, block_size, n_blocks);
  for (int64_t t = 0; t < n; ++t) {
    const int64_t pos = pos0 + t, phys = blocks[pos / block_size];
    PX_CHECK(phys >= 0 && phys < num_blocks,
             "paged kv write: block {} of the table is {}, outside the pool [0, {})",
             pos / block_size, phys, num_blocks);
    std::copy_n(src + t * row_elems, row_elems,
                pool + (phys * block_size + pos % block_size) * row_elems);
  }
}

#define PARALLM_INSTANTIATE_PAGED(T)                                                               \
  template void paged_attention_forward<T>(T*, T*, const T*, const T*, const T*, const PagedSeq*,  \
                                           int64_t, const PagedAttnDims&, double, PagedAttnPath);  \
  template void paged_kv_write<T>(T*, int64_t, int64_t, int64_t, const int32_t*, int64_t, int64_t, \
                                  int64_t, const T*);
PARALLM_INSTANTIATE_PAGED(float)
PARALLM_INSTANTIATE_PAGED(double)
#undef PARALLM_INSTANTIATE_PAGED

}  // namespace parallm::cpu
