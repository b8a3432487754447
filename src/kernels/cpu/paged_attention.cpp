// Paged attention on CPU (see paged_attention.h), two kinds of task, run in
// one parallel region. Direct (decode, few query rows; in
// paged_attention_direct.cpp): one task per (sequence, key tile of whole
// blocks) for every row and head, then a merge of a row's tiles in order.
// Gemm (prefill chunks): a task is (sequence, kv head, its query heads or one
// of them, block of query rows) and walks the visible keys in tiles (from the
// tile that holds its first row's window start), keeping per query row a
// running max m, a running sum l and an unnormalised output, rescaled when m
// grows. Invariant: a query row's result depends only on its own sequence's
// data, position and Tq (never on the rest of the batch, the thread count or
// how heads were split into tasks). 16-bit pools: the Gemm path widens the
// tile it copies anyway, the Direct path each token row it reaches
// (paged_attention_direct.cpp); the rest is the f32 code.
#include "kernels/cpu/paged_attention.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "base/error.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/paged_attention_parts.h"
#include "kernels/cpu/vec_math.h"

namespace parallm::cpu {
namespace {

using paged::Geometry;
using paged::Partials;
using paged::SplitMerge;
using paged::SplitTask;
using paged::Workspace;

// Keys per online-softmax step (rounded to whole blocks): long enough that
// rescaling the output is rare, short enough that the tile stays in L1/L2.
constexpr int64_t kKeyTile = 128;
// Query rows (positions) per task on the Gemm path, as in attention.cpp.
constexpr int64_t kQueryBlock = 64;
// Auto takes the Gemm path from this many query positions of a sequence:
// below it a GEMM's setup and the tile copy cost more than direct loops
// (measured crossover between 2 and 4 at D=64, GQA group 3).
constexpr int64_t kGemmMinRows = 4;
// Keys per Direct path task (rounded to whole blocks): enough tasks that a
// lone sequence decoding at a short context spreads over the threads, each
// long enough that its partial results cost little to merge.
constexpr int64_t kSplitKeys = 32;
// Below this many multiply-adds a call runs on one thread (see attention.cpp),
// unless it reads this many bytes of keys and values: decode (one query row
// per head over a long cache) is bound by memory, which two cores read
// faster than one.
constexpr double kMinParallelFlops = 1e6;
constexpr double kMinParallelBytes = 256 << 10;

// A Gemm path task.
struct Task {
  int64_t seq, row0;  // the sequence and its first row in q
  int64_t i0, i1;     // its query rows [i0, i1)
  int64_t g, h0, h1;  // kv head and query heads [h0, h1)
};

// The running softmax state of one row over tile scores s[0, c): rescales
// acc by exp(m_old - m_new), replaces s by exp(s - m_new), updates m and l.
template <class T>
void online_update(T* s, int64_t c, T& m, double& l, T* acc, int64_t D) {
  double sum = 0.0;
  const T m_new = paged::exp_shifted(s, c, m, sum);
  if (m_new > m) {
    const T alpha = exp_t<T>(m - m_new);  // 0 on the first tile (m = -inf)
    l *= static_cast<double>(alpha);
#pragma omp simd
    for (int64_t e = 0; e < D; ++e) acc[e] *= alpha;
    m = m_new;
  }
  l += sum;
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

// Gemm path: copy the tile's keys and values of kv head g that some row
// sees into contiguous (kn, D) buffers, then per query head one GEMM for the
// scores and one for P.V into the running output.
template <class T, class KV>
void task_gemm(const Task& t, const PagedSeq& s, const Geometry& G, const T* q, const KV* kp,
               const KV* vp, T scale, int64_t kbeg, int64_t kend, Workspace<T>& w) {
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
      paged::load_row(&w.kt[j * D], kp + off, D, G.lowp);
      paged::load_row(&w.vt[j * D], vp + off, D, G.lowp);
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

template <class T, class KV>
void run_task(const Task& t, const PagedSeq& s, const Geometry& G, T* out, T* lse, const T* q,
              const KV* kp, const KV* vp, T scale, Workspace<T>& w) {
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
  if (w.s.size() < static_cast<size_t>(nq * G.tile)) w.s.resize(static_cast<size_t>(nq * G.tile));
  if (w.kt.size() < static_cast<size_t>(G.tile * D)) {
    w.kt.resize(static_cast<size_t>(G.tile * D));
    w.vt.resize(static_cast<size_t>(G.tile * D));
  }
  task_gemm(t, s, G, q, kp, vp, scale, kbeg, kend, w);
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

bool uses_gemm(PagedAttnPath path, const PagedSeq& s) {
  return path == PagedAttnPath::Gemm || (path == PagedAttnPath::Auto && s.Tq >= kGemmMinRows);
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

// The forward over pools of KV (T, or 16-bit values of type lowp).
template <class T, class KV>
void forward(T* out, T* lse, const T* q, const KV* k_pool, const KV* v_pool, LowpType lowp,
             const PagedSeq* seqs, int64_t n_seqs, const PagedAttnDims& d, double scale,
             PagedAttnPath path) {
  check_inputs(seqs, n_seqs, d);
  const int64_t group = d.Hq / d.Hkv;
  // Tiles are whole blocks.
  auto whole_blocks = [&](int64_t keys) {
    return std::max<int64_t>(1, keys / d.block_size) * d.block_size;
  };
  const Geometry G{
      d, group, d.Hq * d.D, d.Hkv * d.D, whole_blocks(kKeyTile), whole_blocks(kSplitKeys), lowp};

  // Direct sequences: one task per key tile, all heads. Gemm sequences: whole
  // GQA groups share each key load; when that leaves threads idle, one task
  // per query head.
  std::vector<SplitTask> splits;
  std::vector<SplitMerge> merges;
  std::vector<Task> tasks;
  double flops = 0.0, kv_bytes = 0.0;
  int64_t slots = 0;
  for (int64_t i = 0, row0 = 0; i < n_seqs; row0 += seqs[i].Tq, ++i) {
    const PagedSeq& s = seqs[i];
    const int64_t keys = s.q_pos0 + s.Tq - G.first(s.q_pos0);  // that some row reads
    flops += static_cast<double>(d.Hq) * s.Tq * keys * d.D;
    kv_bytes += 2.0 * d.Hkv * keys * d.D * sizeof(KV);
    if (s.Tq == 0 || uses_gemm(path, s)) continue;
    const int64_t p0 = static_cast<int64_t>(splits.size()), kend = s.q_pos0 + s.Tq;
    for (int64_t j0 = G.first(s.q_pos0) / G.split_tile * G.split_tile; j0 < kend;
         j0 += G.split_tile, slots += s.Tq * d.Hq)
      splits.push_back({i, row0, j0, std::min(G.split_tile, kend - j0), slots});
    merges.push_back({row0, s.Tq * d.Hq, p0, static_cast<int64_t>(splits.size())});
  }
  for (int heads_per_task : {static_cast<int>(group), 1}) {
    tasks.clear();
    for (int64_t i = 0, row0 = 0; i < n_seqs; row0 += seqs[i].Tq, ++i) {
      const PagedSeq& s = seqs[i];
      if (!uses_gemm(path, s)) continue;
      for (int64_t i0 = 0; i0 < s.Tq; i0 += kQueryBlock)
        for (int64_t h0 = 0; h0 < d.Hq; h0 += heads_per_task)
          tasks.push_back(
              {i, row0, i0, std::min(s.Tq, i0 + kQueryBlock), h0 / group, h0, h0 + heads_per_task});
    }
    if (static_cast<int64_t>(tasks.size() + splits.size()) >= 2 * omp_get_max_threads()) break;
  }
  Partials<T> P(slots, d.D);
  const size_t n_tasks = tasks.size() + splits.size();
  const bool parallel = (flops >= kMinParallelFlops || kv_bytes >= kMinParallelBytes) &&
                        (n_tasks > 1 || merges.size() > 1);
  const T sc = static_cast<T>(scale);
#pragma omp parallel if (parallel)
  {
    Workspace<T> w;
#pragma omp for schedule(dynamic, 1)
    for (size_t i = 0; i < n_tasks; ++i) {
      if (i < splits.size()) {
        const SplitTask& t = splits[i];
        paged::split_task(t, seqs[t.seq], G, q, k_pool, v_pool, sc, P, w);
      } else {
        const Task& t = tasks[i - splits.size()];
        run_task(t, seqs[t.seq], G, out, lse, q, k_pool, v_pool, sc, w);
      }
    }
#pragma omp for schedule(dynamic, 1)
    for (size_t i = 0; i < merges.size(); ++i) paged::merge_rows(merges[i], splits, G, P, out, lse);
  }
}

// The rows' bounds against the pool; the caller stores each row.
void check_write(int64_t num_blocks, int64_t block_size, const int32_t* blocks, int64_t n_blocks,
                 int64_t pos0, int64_t n) {
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
  }
}

}  // namespace

template <class T>
void paged_attention_forward(T* out, T* lse, const T* q, const T* k_pool, const T* v_pool,
                             const PagedSeq* seqs, int64_t n_seqs, const PagedAttnDims& d,
                             double scale, PagedAttnPath path) {
  forward(out, lse, q, k_pool, v_pool, LowpType::BF16, seqs, n_seqs, d, scale, path);
}

void paged_attention_forward(float* out, float* lse, const float* q, const uint16_t* k_pool,
                             const uint16_t* v_pool, LowpType t, const PagedSeq* seqs,
                             int64_t n_seqs, const PagedAttnDims& d, double scale,
                             PagedAttnPath path) {
  forward(out, lse, q, k_pool, v_pool, t, seqs, n_seqs, d, scale, path);
}

template <class T>
void paged_kv_write(T* pool, int64_t num_blocks, int64_t block_size, int64_t row_elems,
                    const int32_t* blocks, int64_t n_blocks, int64_t pos0, int64_t n,
                    const T* src) {
  check_write(num_blocks, block_size, blocks, n_blocks, pos0, n);
  for (int64_t t = 0; t < n; ++t) {
    const int64_t pos = pos0 + t, phys = blocks[pos / block_size];
    std::copy_n(src + t * row_elems, row_elems,
                pool + (phys * block_size + pos % block_size) * row_elems);
  }
}

void paged_kv_write(uint16_t* pool, LowpType lowp, int64_t num_blocks, int64_t block_size,
                    int64_t row_elems, const int32_t* blocks, int64_t n_blocks, int64_t pos0,
                    int64_t n, const float* src) {
  check_write(num_blocks, block_size, blocks, n_blocks, pos0, n);
  for (int64_t t = 0; t < n; ++t) {
    const int64_t pos = pos0 + t, phys = blocks[pos / block_size];
    round_to_lowp(pool + (phys * block_size + pos % block_size) * row_elems, src + t * row_elems,
                  row_elems, lowp);
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
