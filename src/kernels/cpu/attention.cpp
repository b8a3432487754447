// Flash-style attention on CPU (see attention.h). Work is cut into tiles of
// (batch, query head, block of kQueryBlock query rows) x (visible keys); each
// tile's scores are computed by BLAS GEMMs into a per-thread workspace that
// dies with the call. Keys in every query row's future are never computed.
// Invariant: every output element is written by exactly one task, in an order
// fixed by the shapes, so results never depend on thread scheduling.
#include "kernels/cpu/attention.h"

#include <omp.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "base/error.h"
#include "base/rng.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/vec_math.h"

namespace parallm::cpu {
namespace {

// 64 rows keep a tile's GEMMs efficient while wasting little on the causal
// diagonal (about (1 + 1/nblocks)/2 of the full square is computed). Under a
// document mask or a sliding window a tile also skips the keys before the
// earliest one its rows can see.
constexpr int64_t kQueryBlock = 64;
// Key block of the two-pass backward's dk/dv pass.
constexpr int64_t kKeyBlock = 64;
// Below this many multiply-adds (~20 us) a call runs on one thread: forking
// costs more than it saves, and far more when the cores are oversubscribed.
constexpr double kMinParallelFlops = 1e6;
// ... unless it reads this many bytes of keys and values (decode: one query
// row per head over a long cache, bound by memory, which two cores read
// faster than one).
constexpr double kMinParallelBytes = 256 << 10;

bool worth_parallel(const AttnDims& d) {
  const double kv_bytes = 2.0 * d.B * d.Hkv * d.Tk * d.D * sizeof(float);
  return static_cast<double>(d.B) * d.Hq * d.Tq * d.Tk * d.D >= kMinParallelFlops ||
         (kv_bytes >= kMinParallelBytes && d.B * d.Hq > 1);
}

// The tiles' GEMMs run inside our OpenMP regions, where oneDNN and the
// OpenMP build of OpenBLAS both run on the calling thread. (A guard that set
// OpenBLAS to one thread around each call used to live here; in the OpenMP
// build openblas_set_num_threads is omp_set_num_threads, so it made every
// region below a team of one.)

// The row loops live in their own non-inlined functions: inlined into the
// OpenMP-outlined task loop, GCC 12 left them scalar (measured: the softmax
// then cost as much as the GEMMs).

// row[0, c) <- exp(row - max); returns {max, sum} (sum in double).
template <class T>
[[gnu::noinline]] std::pair<T, double> exp_shifted_row(T* row, int64_t c) {
  T m = row[0];
#pragma omp simd reduction(max : m)
  for (int64_t j = 0; j < c; ++j) m = row[j] > m ? row[j] : m;
#pragma omp simd
  for (int64_t j = 0; j < c; ++j) row[j] = exp_t<T>(row[j] - m);
  double sum = 0.0;  // a separate loop: fused with the exp, GCC 12 does not vectorise it
#pragma omp simd reduction(+ : sum)
  for (int64_t j = 0; j < c; ++j) sum += row[j];
  return {m, sum};
}

// p[0, c) <- exp(s - lse); ds[0, c) <- p * (dp - di), in place over (s, dp).
template <class T>
[[gnu::noinline]] void softmax_grad_row(T* s, T* dp, int64_t c, T lse, T di) {
#pragma omp simd
  for (int64_t j = 0; j < c; ++j) {
    const T p = exp_t<T>(s[j] - lse);
    s[j] = p;
    dp[j] = p * (dp[j] - di);
  }
}

// The key of one (global sample, global head) pair; the counter inside it is
// (query position, key position), both below 2^32.
uint64_t dropout_row_key(const AttnDims& d, int64_t sample, int64_t head) {
  return mix64(mix64(d.dropout_key ^ mix64(static_cast<uint64_t>(sample))) ^
               static_cast<uint64_t>(head) * 0xD1B54A32D192ED03ull);
}

// m[0, c) <- dropout multipliers of keys j0 .. j0+c-1 for local (b, h, i).
template <class T>
[[gnu::noinline]] void dropout_mask_row(T* m, const AttnDims& d, int64_t b, int64_t h, int64_t i,
                                        int64_t j0, int64_t c) {
  const uint64_t key = dropout_row_key(d, d.sample0 + b, d.head0 + h);
  const uint64_t qpos = static_cast<uint64_t>(d.q_pos0 + i) << 32;
  const T keep = static_cast<T>(1.0 / (1.0 - d.dropout_p));
  for (int64_t j = 0; j < c; ++j) {
    const double u = uniform_at(key, qpos | static_cast<uint64_t>(d.k_pos0 + j0 + j));
    m[j] = u >= d.dropout_p ? keep : T(0);
  }
}

// Shapes, strides and the causal rule shared by forward and backward.
struct Layout {
  explicit Layout(const AttnDims& dims) : d(dims) {
    PX_CHECK(d.B >= 0 && d.Tq >= 0 && d.Tk >= 0 && d.D > 0,
             "attention: bad dims B={} Tq={} Tk={} D={}", d.B, d.Tq, d.Tk, d.D);
    PX_CHECK(d.Hkv > 0 && d.Hq > 0 && d.Hq % d.Hkv == 0,
             "attention: query heads ({}) must be a positive multiple of kv heads ({})", d.Hq,
             d.Hkv);
    PX_CHECK(d.dropout_p >= 0.0 && d.dropout_p < 1.0,
             "attention: dropout probability must be in [0, 1), got {}", d.dropout_p);
    PX_CHECK(d.doc_start == nullptr || d.doc_ld >= d.q_pos0 + d.Tq,
             "attention: document starts of {} positions per row, but queries reach position {}",
             d.doc_ld, d.q_pos0 + d.Tq);
    PX_CHECK(d.window >= 0 && (d.window == 0 || d.causal),
             "attention: a sliding window ({}) must be >= 0 and needs the causal mask", d.window);
    group = d.Hq / d.Hkv;
    ldq = d.Hq * d.D;
    ldk = d.Hkv * d.D;
    nqb = (d.Tq + kQueryBlock - 1) / kQueryBlock;
  }
  // Keys first(b, i) .. visible(i)-1 are visible to query i of row b: keys
  // after are in its future, keys before in an earlier document or out of
  // the sliding window.
  int64_t visible(int64_t i) const {
    if (!d.causal) return d.Tk;
    return std::clamp<int64_t>(d.q_pos0 + i - d.k_pos0 + 1, 0, d.Tk);
  }
  int64_t first(int64_t b, int64_t i) const {
    int64_t lo = 0;  // in global positions
    if (d.doc_start != nullptr) lo = d.doc_start[b * d.doc_ld + d.q_pos0 + i];
    if (d.window > 0) lo = std::max(lo, d.q_pos0 + i - d.window + 1);
    return std::clamp<int64_t>(lo - d.k_pos0, 0, d.Tk);
  }
  // The keys [lo, hi) that some query of rows [i0, i1) of row b sees (hi <=
  // lo: none). visible() grows with i, so the last row sees furthest.
  std::pair<int64_t, int64_t> keys(int64_t b, int64_t i0, int64_t i1) const {
    int64_t lo = d.Tk;
    for (int64_t i = i0; i < i1; ++i) lo = std::min(lo, first(b, i));
    return {lo, visible(i1 - 1)};
  }
  int64_t q_off(int64_t b, int64_t i, int64_t h) const { return ((b * d.Tq + i) * d.Hq + h) * d.D; }
  int64_t k_off(int64_t b, int64_t j, int64_t g) const {
    return ((b * d.Tk + j) * d.Hkv + g) * d.D;
  }
  int64_t lse_off(int64_t b, int64_t h, int64_t i) const { return (b * d.Hq + h) * d.Tq + i; }

  const AttnDims& d;
  int64_t group, ldq, ldk, nqb;
};

// One forward tile: query rows [i0, i1) of head h in batch b, all visible keys.
// s: nq * Tk scratch; inv: nq scratch.
template <class T>
void forward_tile(T* out, T* lse, const T* q, const T* k, const T* v, const Layout& L, double scale,
                  int64_t b, int64_t h, int64_t i0, int64_t i1, T* s, double* inv, T* mask) {
  const int64_t nq = i1 - i0, D = L.d.D, g = h / L.group;
  const auto [k0, k1] = L.keys(b, i0, i1);
  const int64_t kn = k1 - k0;
  T* o = out + L.q_off(b, i0, h);
  T* l = lse + L.lse_off(b, h, i0);
  if (kn <= 0) {
    for (int64_t r = 0; r < nq; ++r) {
      std::fill_n(o + r * L.ldq, D, T(0));
      l[r] = -std::numeric_limits<T>::infinity();
    }
    return;
  }
  gemm(false, true, nq, kn, D, T(scale), q + L.q_off(b, i0, h), L.ldq, k + L.k_off(b, k0, g), L.ldk,
       T(0), s, kn);
  for (int64_t r = 0; r < nq; ++r) {
    T* row = s + r * kn;
    const int64_t a = L.first(b, i0 + r) - k0, e = L.visible(i0 + r) - k0;  // visible [a, e)
    if (e <= a) {
      std::fill_n(row, kn, T(0));
      inv[r] = 0.0;
      l[r] = -std::numeric_limits<T>::infinity();
      continue;
    }
    const auto [m, sum] = exp_shifted_row(row + a, e - a);
    std::fill(row, row + a, T(0));
    std::fill(row + e, row + kn, T(0));
    if (L.d.dropout()) {  // after the sum: lse is the un-dropped statistic
      dropout_mask_row(mask, L.d, b, h, i0 + r, k0 + a, e - a);
      for (int64_t j = a; j < e; ++j) row[j] *= mask[j - a];
    }
    inv[r] = 1.0 / sum;
    l[r] = static_cast<T>(static_cast<double>(m) + std::log(sum));
  }
  gemm(false, false, nq, D, kn, T(1), s, kn, v + L.k_off(b, k0, g), L.ldk, T(0), o, L.ldq);
  for (int64_t r = 0; r < nq; ++r) {
    const T f = static_cast<T>(inv[r]);
    T* orow = o + r * L.ldq;
    for (int64_t e = 0; e < D; ++e) orow[e] *= f;
  }
}

template <class T>
struct BwdArgs {
  T *dq, *dk, *dv;
  const T *dout, *q, *k, *v, *out, *lse;
  double scale;
};

// One backward tile: query rows [i0, i1) of head h, keys [j0, j1). Recomputes
// P, forms dS = P * (dP - Di) and accumulates the requested gradients.
// s, dp: nq * (j1 - j0) scratch each.
template <class T>
void backward_tile(const BwdArgs<T>& a, const Layout& L, int64_t b, int64_t h, int64_t i0,
                   int64_t i1, int64_t j0, int64_t j1, bool want_dq, bool want_dkv, T* s, T* dp,
                   T* mask) {
  const int64_t nq = i1 - i0, kn = j1 - j0, D = L.d.D, g = h / L.group;
  const T* qb = a.q + L.q_off(b, i0, h);
  const T* dob = a.dout + L.q_off(b, i0, h);
  const T* ob = a.out + L.q_off(b, i0, h);
  const T* kb = a.k + L.k_off(b, j0, g);
  const T* vb = a.v + L.k_off(b, j0, g);
  const T* l = a.lse + L.lse_off(b, h, i0);
  gemm(false, true, nq, kn, D, T(a.scale), qb, L.ldq, kb, L.ldk, T(0), s, kn);
  gemm(false, true, nq, kn, D, T(1), dob, L.ldq, vb, L.ldk, T(0), dp, kn);
  for (int64_t r = 0; r < nq; ++r) {
    T* prow = s + r * kn;
    T* dsrow = dp + r * kn;
    // Visible keys of this row within the block: [a, c).
    const int64_t a = std::clamp<int64_t>(L.first(b, i0 + r) - j0, 0, kn);
    const int64_t c = std::clamp<int64_t>(L.visible(i0 + r) - j0, 0, kn);
    const T lr = l[r];
    if (c <= a || lr == -std::numeric_limits<T>::infinity()) {  // no visible key: no gradient
      std::fill_n(prow, kn, T(0));
      std::fill_n(dsrow, kn, T(0));
      continue;
    }
    double di = 0.0;  // Di = rowsum(dout * out) = sum_j P dP
    const T* dorow = dob + r * L.ldq;
    const T* orow = ob + r * L.ldq;
#pragma omp simd reduction(+ : di)
    for (int64_t e = 0; e < D; ++e) di += static_cast<double>(dorow[e]) * orow[e];
    if (L.d.dropout()) {  // P*M for dV; dS = P * (dP*M - Di)
      dropout_mask_row(mask, L.d, b, h, i0 + r, j0 + a, c - a);
      for (int64_t j = a; j < c; ++j) {
        const T p = exp_t<T>(prow[j] - lr);
        prow[j] = p * mask[j - a];
        dsrow[j] = p * (dsrow[j] * mask[j - a] - static_cast<T>(di));
      }
    } else {
      softmax_grad_row(prow + a, dsrow + a, c - a, lr, static_cast<T>(di));
    }
    std::fill(prow, prow + a, T(0));
    std::fill(dsrow, dsrow + a, T(0));
    std::fill(prow + c, prow + kn, T(0));
    std::fill(dsrow + c, dsrow + kn, T(0));
  }
  if (want_dkv) {
    gemm(true, false, kn, D, nq, T(1), s, kn, dob, L.ldq, T(1), a.dv + L.k_off(b, j0, g), L.ldk);
    gemm(true, false, kn, D, nq, T(a.scale), dp, kn, qb, L.ldq, T(1), a.dk + L.k_off(b, j0, g),
         L.ldk);
  }
  if (want_dq) {
    gemm(false, false, nq, D, kn, T(a.scale), dp, kn, kb, L.ldk, T(1), a.dq + L.q_off(b, i0, h),
         L.ldq);
  }
}

}  // namespace

double attention_dropout_factor(const AttnDims& d, int64_t sample, int64_t head, int64_t qpos,
                                int64_t kpos) {
  if (!d.dropout()) return 1.0;
  const double u = uniform_at(dropout_row_key(d, sample, head),
                              (static_cast<uint64_t>(qpos) << 32) | static_cast<uint64_t>(kpos));
  return u >= d.dropout_p ? 1.0 / (1.0 - d.dropout_p) : 0.0;
}

namespace {
// d.progress, on the calling thread only (thread 0 of the region is it):
// MPI may be called from the main thread alone.
void poll(const AttnDims& d) {
  if (d.progress != nullptr && omp_get_thread_num() == 0) (*d.progress)();
}
}  // namespace

template <class T>
void attention_forward(T* out, T* lse, const T* q, const T* k, const T* v, const AttnDims& d,
                       double scale) {
  const Layout L(d);
  if (d.B == 0 || d.Tq == 0) return;
  const int64_t ntasks = d.B * d.Hq * L.nqb;
  const bool parallel = worth_parallel(d);
#pragma omp parallel if (parallel)
  {
    std::vector<T> s(static_cast<size_t>(kQueryBlock * std::max<int64_t>(d.Tk, 1)));
    std::vector<double> inv(kQueryBlock);
    std::vector<T> mask(d.dropout() ? static_cast<size_t>(d.Tk) : 0);
    // Later query blocks see more keys; dynamic scheduling evens the load.
#pragma omp for schedule(dynamic, 1)
    for (int64_t t = 0; t < ntasks; ++t) {
      const int64_t qb = t % L.nqb, h = (t / L.nqb) % d.Hq, b = t / (L.nqb * d.Hq);
      const int64_t i0 = qb * kQueryBlock, i1 = std::min(d.Tq, i0 + kQueryBlock);
      forward_tile(out, lse, q, k, v, L, scale, b, h, i0, i1, s.data(), inv.data(), mask.data());
      poll(d);
    }
  }
}

AttnBwdSplit attention_backward_auto_split(const AttnDims& d) {
  // Two tasks per thread balance well enough; below that the extra GEMMs of
  // the two-pass split cost less than idle threads.
  const int64_t nthreads = worth_parallel(d) ? omp_get_max_threads() : 1;
  return (nthreads == 1 || d.B * d.Hkv >= 2 * nthreads) ? AttnBwdSplit::ByKvHead
                                                        : AttnBwdSplit::TwoPass;
}

template <class T>
void attention_backward_split(T* dq, T* dk, T* dv, const T* dout, const T* q, const T* k,
                              const T* v, const T* out, const T* lse, const AttnDims& d,
                              double scale, AttnBwdSplit split) {
  const Layout L(d);
  if (d.B == 0 || d.Tq == 0 || d.Tk == 0) return;
  const BwdArgs<T> a{dq, dk, dv, dout, q, k, v, out, lse, scale};
  const bool parallel = worth_parallel(d);
  if (split == AttnBwdSplit::Auto) split = attention_backward_auto_split(d);
  const size_t ws = static_cast<size_t>(kQueryBlock * d.Tk);
  if (split == AttnBwdSplit::ByKvHead) {
    // A task owns dk/dv of (b, g) and dq of the group's query heads; it visits
    // heads and query blocks in a fixed order, so sums are deterministic.
    const int64_t ntasks = d.B * d.Hkv;
#pragma omp parallel if (parallel)
    {
      std::vector<T> s(ws), dp(ws), mask(d.dropout() ? static_cast<size_t>(d.Tk) : 0);
#pragma omp for schedule(dynamic, 1)
      for (int64_t t = 0; t < ntasks; ++t) {
        const int64_t g = t % d.Hkv, b = t / d.Hkv;
        for (int64_t h = g * L.group; h < (g + 1) * L.group; ++h) {
          for (int64_t qb = 0; qb < L.nqb; ++qb) {
            const int64_t i0 = qb * kQueryBlock, i1 = std::min(d.Tq, i0 + kQueryBlock);
            const auto [k0, k1] = L.keys(b, i0, i1);
            if (k1 > k0)
              backward_tile(a, L, b, h, i0, i1, k0, k1, true, true, s.data(), dp.data(),
                            mask.data());
            poll(d);
          }
        }
      }
    }
    return;
  }
  const int64_t nkb = (d.Tk + kKeyBlock - 1) / kKeyBlock;
  const int64_t ntasks_kv = d.B * d.Hkv * nkb, ntasks_q = d.B * d.Hq * L.nqb;
#pragma omp parallel if (parallel)
  {
    std::vector<T> s(ws), dp(ws), mask(d.dropout() ? static_cast<size_t>(d.Tk) : 0);
    // Pass 1: dk, dv of key block [j0, j1) of (b, g), from every query head of
    // the group. Pass 2 writes only dq, so threads may start it without a barrier.
#pragma omp for schedule(dynamic, 1) nowait
    for (int64_t t = 0; t < ntasks_kv; ++t) {
      const int64_t kb = t % nkb, g = (t / nkb) % d.Hkv, b = t / (nkb * d.Hkv);
      const int64_t j0 = kb * kKeyBlock, j1 = std::min(d.Tk, j0 + kKeyBlock);
      for (int64_t h = g * L.group; h < (g + 1) * L.group; ++h) {
        for (int64_t qb = 0; qb < L.nqb; ++qb) {
          const int64_t i0 = qb * kQueryBlock, i1 = std::min(d.Tq, i0 + kQueryBlock);
          const auto [k0, k1] = L.keys(b, i0, i1);
          const int64_t kbeg = std::max(j0, k0), kend = std::min(j1, k1);
          if (kend > kbeg)
            backward_tile(a, L, b, h, i0, i1, kbeg, kend, false, true, s.data(), dp.data(),
                          mask.data());
          poll(d);
        }
      }
    }
    // Pass 2: dq of query block (b, h, qb) over all its keys.
#pragma omp for schedule(dynamic, 1)
    for (int64_t t = 0; t < ntasks_q; ++t) {
      const int64_t qb = t % L.nqb, h = (t / L.nqb) % d.Hq, b = t / (L.nqb * d.Hq);
      const int64_t i0 = qb * kQueryBlock, i1 = std::min(d.Tq, i0 + kQueryBlock);
      const auto [k0, k1] = L.keys(b, i0, i1);
      if (k1 > k0)
        backward_tile(a, L, b, h, i0, i1, k0, k1, true, false, s.data(), dp.data(), mask.data());
      poll(d);
    }
  }
}

template <class T>
void attention_backward(T* dq, T* dk, T* dv, const T* dout, const T* q, const T* k, const T* v,
                        const T* out, const T* lse, const AttnDims& d, double scale) {
  attention_backward_split(dq, dk, dv, dout, q, k, v, out, lse, d, scale, AttnBwdSplit::Auto);
}

#define PARALLM_INSTANTIATE_ATTENTION(T)                                                        \
  template void attention_forward<T>(T*, T*, const T*, const T*, const T*, const AttnDims&,     \
                                     double);                                                   \
  template void attention_backward<T>(T*, T*, T*, const T*, const T*, const T*, const T*,       \
                                      const T*, const T*, const AttnDims&, double);             \
  template void attention_backward_split<T>(T*, T*, T*, const T*, const T*, const T*, const T*, \
                                            const T*, const T*, const AttnDims&, double,        \
                                            AttnBwdSplit);
PARALLM_INSTANTIATE_ATTENTION(float)
PARALLM_INSTANTIATE_ATTENTION(double)
#undef PARALLM_INSTANTIATE_ATTENTION

}  // namespace parallm::cpu
