// Skinny GEMM kernels (see skinny_gemm.h). AVX2 + FMA + F16C where the build
// has them. A thread's stretch of W rows (a chunk of tasks, run_tasks) is
// read as kStreams sequential streams at once: the stretch is cut into
// kStreams equal parts and row i of every part is multiplied in one tile.
// Measured on AMD EPYC (Zen 3, AVX2, 2 threads), a GPT-2 token's f32 GEMMs
// took 11.7 ms this way against 16.2 ms reading one row after another: one
// core keeps more reads in flight over several streams than its prefetcher
// runs ahead of one. Each 8 values of W are loaded (16-bit ones widened:
// bf16 by a shift, f16 by F16C) once per tile: for each row of A in turn
// over the streams, or for up to 4 rows of A over one 16-bit stream
// (rows_range). A portable loop otherwise.
// Several weights of one input (skinny_gemm_nt_parts) share one parallel
// region: their rows are one list of tasks.
// Invariant: C[m][n] is two 8-lane sums, of K's even and of its odd
// 8-blocks, added lane by lane, then across lanes in a fixed tree, then K's
// last K % 8 products: it depends on row n of W, row m of A and K only (and
// is the order this kernel had before it read several streams).
#include "kernels/cpu/skinny_gemm.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#define PX_SKINNY_AVX2 1
#include <immintrin.h>
#endif

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <type_traits>

#include "base/error.h"
#include "tensor/half.h"

namespace parallm::cpu {

namespace {

constexpr int kStreams = 4;                // W rows in flight per thread (one per stream)
constexpr int64_t kKChunk = 256;           // K per pass when A's rows take turns (a multiple of 16)
constexpr int64_t kTaskBytes = 16 << 10;   // W bytes per scheduling unit
constexpr int64_t kMinTasks = 16;          // ... but at least this many units
constexpr int64_t kMaxChunk = 16;          // units a thread takes at once, at most
constexpr int64_t kParallelMin = 1 << 15;  // W elements below which one thread does it all

// Element access per weight format: scalar, and 8 lanes widened to f32.
// kPrefetch: elements ahead that one stream (S = 1) prefetches in software.
// Measured on AMD EPYC (Zen 3, AVX2), 2 threads: 16-bit rows, slower to
// consume per byte, gained ~5% from 2 KiB ahead; f32 rows lost 5-15%.
struct F32Rows {
  using T = float;
  static constexpr int64_t kPrefetch = 0;
  static float at(const float* p) { return *p; }
#ifdef PX_SKINNY_AVX2
  static __m256 load8(const float* p) { return _mm256_loadu_ps(p); }
#endif
};
struct Bf16Rows {
  using T = uint16_t;
  static constexpr int64_t kPrefetch = 1024;
  static float at(const uint16_t* p) { return bf16_to_f32(*p); }
#ifdef PX_SKINNY_AVX2
  static __m256 load8(const uint16_t* p) {
    const __m256i h = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(h, 16));
  }
#endif
};
struct F16Rows {
  using T = uint16_t;
  static constexpr int64_t kPrefetch = 1024;
  static float at(const uint16_t* p) { return f16_to_f32(*p); }
#ifdef PX_SKINNY_AVX2
  static __m256 load8(const uint16_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
#endif
};

// The running sums of one C[m][n], kept between stretches of K.
struct Lanes {
  float even[8], odd[8];
};

// even + odd lane by lane, then across lanes in the tree the AVX2 reduction
// takes: (j, j + 4), then (j, j + 2), then (0, 1).
inline float lane_sum(const Lanes& x) {
  float v[8];
  for (int j = 0; j < 8; ++j) v[j] = x.even[j] + x.odd[j];
  for (int j = 0; j < 4; ++j) v[j] += v[j + 4];
  for (int j = 0; j < 2; ++j) v[j] += v[j + 2];
  return v[0] + v[1];
}

#ifdef PX_SKINNY_AVX2
// even + odd lane by lane, then across lanes: (j, j + 4), (j, j + 2), (0, 1).
inline float hsum(__m256 even, __m256 odd) {
  const __m256 v = _mm256_add_ps(even, odd);
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}
#endif

// For S rows of W (wstep elements apart) and MR rows of A: the products
// w[s * wstep + k] * a[m * lda + k] over k0 <= k < k1, block k / 8 into even
// or odd lanes by its parity (k0 a multiple of 16, k1 of 8). kWhole: the
// whole of K from zero, summed into sums[m * S + s]; else added to acc[m *
// S + s], whose trip through memory between calls leaves the bits as one
// unbroken loop gives.
template <class L, int S, int MR, bool kWhole>
inline void tile(const typename L::T* w, int64_t wstep, const float* a, int64_t lda, int64_t k0,
                 int64_t k1, Lanes* acc, float* sums) {
#ifdef PX_SKINNY_AVX2
  __m256 ev[S][MR], od[S][MR];
  for (int s = 0; s < S; ++s)
    for (int m = 0; m < MR; ++m) {
      if constexpr (kWhole) {
        ev[s][m] = od[s][m] = _mm256_setzero_ps();
      } else {
        ev[s][m] = _mm256_loadu_ps(acc[m * S + s].even);
        od[s][m] = _mm256_loadu_ps(acc[m * S + s].odd);
      }
    }
  int64_t k = k0;
  for (; k + 16 <= k1; k += 16) {
    if constexpr (S == 1 && L::kPrefetch > 0)
      _mm_prefetch(reinterpret_cast<const char*>(w + k + L::kPrefetch), _MM_HINT_T0);
    for (int s = 0; s < S; ++s) {
      const __m256 w0 = L::load8(w + s * wstep + k), w1 = L::load8(w + s * wstep + k + 8);
      for (int m = 0; m < MR; ++m) {
        ev[s][m] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(a + m * lda + k), ev[s][m]);
        od[s][m] = _mm256_fmadd_ps(w1, _mm256_loadu_ps(a + m * lda + k + 8), od[s][m]);
      }
    }
  }
  if (k < k1)  // a last, even block
    for (int s = 0; s < S; ++s) {
      const __m256 w0 = L::load8(w + s * wstep + k);
      for (int m = 0; m < MR; ++m)
        ev[s][m] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(a + m * lda + k), ev[s][m]);
    }
  for (int s = 0; s < S; ++s)
    for (int m = 0; m < MR; ++m) {
      if constexpr (kWhole) {
        sums[m * S + s] = hsum(ev[s][m], od[s][m]);
      } else {
        _mm256_storeu_ps(acc[m * S + s].even, ev[s][m]);
        _mm256_storeu_ps(acc[m * S + s].odd, od[s][m]);
      }
    }
#else
  for (int s = 0; s < S; ++s)
    for (int m = 0; m < MR; ++m) {
      Lanes whole = {};
      Lanes& x = kWhole ? whole : acc[m * S + s];
      for (int64_t k = k0; k < k1; k += 8) {
        float* lanes = k % 16 == 0 ? x.even : x.odd;
        for (int j = 0; j < 8; ++j) lanes[j] += L::at(w + s * wstep + k + j) * a[m * lda + k + j];
      }
      if constexpr (kWhole) sums[m * S + s] = lane_sum(whole);
    }
#endif
}

// C's columns n, n + nstep, ... (S of them) for every row of A, MR rows at a
// time. With several streams and more rows than MR, K is taken kKChunk at a
// time, so the S stretches of W, read from memory for the first rows, are
// read from L1 for the others (one W row stays in L1 whole).
template <class L, int S, int MR>
void columns(int64_t M, int64_t K, float alpha, const float* A, int64_t lda, const typename L::T* W,
             int64_t ldw, float beta, float* C, int64_t ldc, int64_t n, int64_t nstep) {
  const typename L::T* w = W + n * ldw;
  const int64_t wstep = nstep * ldw, K8 = K / 8 * 8;
  const int64_t step = S > 1 && M > MR ? kKChunk : std::max<int64_t>(K8, 8);
  float sums[kSkinnyMaxRows * S];
  if (step >= K8) {  // one pass: the sums stay in registers
    int64_t m = 0;
    for (; m + MR <= M; m += MR)
      tile<L, S, MR, true>(w, wstep, A + m * lda, lda, 0, K8, nullptr, sums + m * S);
    for (; m < M; ++m)
      tile<L, S, 1, true>(w, wstep, A + m * lda, lda, 0, K8, nullptr, sums + m * S);
  } else {
    Lanes acc[kSkinnyMaxRows * S] = {};
    for (int64_t k0 = 0; k0 < K8; k0 += step) {
      const int64_t k1 = std::min(K8, k0 + step);
      int64_t m = 0;
      for (; m + MR <= M; m += MR)
        tile<L, S, MR, false>(w, wstep, A + m * lda, lda, k0, k1, acc + m * S, nullptr);
      for (; m < M; ++m)
        tile<L, S, 1, false>(w, wstep, A + m * lda, lda, k0, k1, acc + m * S, nullptr);
    }
    for (int64_t i = 0; i < M * S; ++i) sums[i] = lane_sum(acc[i]);
  }
  for (int64_t m = 0; m < M; ++m)
    for (int s = 0; s < S; ++s) {
      float out = sums[m * S + s];
      for (int64_t j = K8; j < K; ++j) out += L::at(w + s * wstep + j) * A[m * lda + j];
      float* c = C + m * ldc + n + s * nstep;  // beta 0: C is not read (it may hold NaN)
      *c = beta == 0.0f ? alpha * out : alpha * out + beta * *c;
    }
}

// Rows n0 .. n1 - 1 of W (columns of C) as S streams, the few rows left
// over one at a time.
template <class L, int S, int MR>
void rows_range(int64_t M, int64_t K, float alpha, const float* A, int64_t lda,
                const typename L::T* W, int64_t ldw, float beta, float* C, int64_t ldc, int64_t n0,
                int64_t n1) {
  const int64_t part = (n1 - n0) / S;
  for (int64_t i = 0; i < part; ++i)
    columns<L, S, MR>(M, K, alpha, A, lda, W, ldw, beta, C, ldc, n0 + i, part);
  for (int64_t n = n0 + S * part; n < n1; ++n)
    columns<L, 1, MR>(M, K, alpha, A, lda, W, ldw, beta, C, ldc, n, 1);
}

// One row of A: kStreams streams of W, each 8 values multiplied once. More
// rows of f32 W: the same streams, each row of A in turn over stretches of K
// (faster at 2 to 8 rows than 2 rows of A sharing each load of 2 streams).
// More rows of 16-bit W: one stream, its values widened once for up to 4
// rows of A (widening per row of A cost up to 2x at 8 rows), as before
// the streams. Measured on AMD EPYC, decode_gemm_bench, GPT-2 shapes.
template <class L>
void rows_range(int64_t M, int64_t K, float alpha, const float* A, int64_t lda,
                const typename L::T* W, int64_t ldw, float beta, float* C, int64_t ldc, int64_t n0,
                int64_t n1) {
  if (M == 1 || std::is_same_v<typename L::T, float>)
    rows_range<L, kStreams, 1>(M, K, alpha, A, lda, W, ldw, beta, C, ldc, n0, n1);
  else
    rows_range<L, 1, 4>(M, K, alpha, A, lda, W, ldw, beta, C, ldc, n0, n1);
}

void check_dims(int64_t M, int64_t N, int64_t K, int64_t lda, int64_t ldw, int64_t ldc) {
  PX_CHECK(K >= 0 && lda >= K && ldw >= K && ldc >= N,
           "skinny_gemm: bad leading dimensions (M {}, N {}, K {}, lda {}, ldw {}, ldc {})", M, N,
           K, lda, ldw, ldc);
}

// Rows of W per task: about kTaskBytes, and at least kMinTasks tasks per
// weight. Tasks are handed out in chunks (run_tasks).
int64_t task_rows(int64_t N, int64_t ldw, int64_t elem_bytes) {
  const int64_t row_bytes = std::max<int64_t>(ldw, 1) * elem_bytes;
  return std::max<int64_t>(1, std::min(kTaskBytes / row_bytes, (N + kMinTasks - 1) / kMinTasks));
}

// Runs tasks 0 .. tasks - 1, in one parallel region when parallel, as
// chunks: each thread takes the next chunk of consecutive tasks
// (consecutive W rows) from a shared counter and calls chunk_fn(t0, t1). A
// chunk is a 2 * threads-th of what is left, between 1 and kMaxChunk tasks:
// large while much is left (few hand-outs, long streams), small at the end
// (the threads finish within a few microseconds of each other, where 128
// KiB tasks left one idle for half a task at each of a token's ~60 joins),
// and never more than kMaxChunk (256 KiB), so a thread that loses its core
// for a while on a shared machine holds up the others by one chunk at most.
template <class F>
void run_tasks(int64_t tasks, bool parallel, const F& chunk_fn) {
  std::atomic<int64_t> next{0};
#pragma omp parallel if (parallel)
  {
    const int64_t share = 2 * static_cast<int64_t>(omp_get_num_threads());
    int64_t t0 = next.load(std::memory_order_relaxed), chunk = 1;
    for (;;) {
      do {
        if (t0 >= tasks) break;
        chunk = std::clamp<int64_t>((tasks - t0) / share, 1, kMaxChunk);
      } while (!next.compare_exchange_weak(t0, t0 + chunk, std::memory_order_relaxed));
      if (t0 >= tasks) break;
      chunk_fn(t0, t0 + chunk);
      t0 = next.load(std::memory_order_relaxed);
    }
  }
}

// Every part's rows as tasks of one parallel region (one fork and join for
// all of them).
template <class L>
void skinny_parts(int64_t M, int64_t K, float alpha, const float* A, int64_t lda,
                  const SkinnyPart* parts, int64_t n_parts, float beta) {
  if (M <= 0) return;
  constexpr int64_t kMaxParts = 4;
  PX_CHECK(n_parts >= 1 && n_parts <= kMaxParts, "skinny_gemm: {} parts (1 to {})", n_parts,
           kMaxParts);
  int64_t rows_per[kMaxParts], first[kMaxParts + 1] = {0};
  int64_t work = 0;
  for (int64_t p = 0; p < n_parts; ++p) {
    const SkinnyPart& q = parts[p];
    check_dims(M, q.N, K, lda, q.ldw, q.ldc);
    rows_per[p] = task_rows(q.N, q.ldw, static_cast<int64_t>(sizeof(typename L::T)));
    first[p + 1] = first[p] + (std::max<int64_t>(q.N, 0) + rows_per[p] - 1) / rows_per[p];
    work += std::max<int64_t>(q.N, 0) * K;
  }
  const int64_t tasks = first[n_parts];
  run_tasks(tasks, work >= kParallelMin, [&](int64_t t0, int64_t t1) {
    int64_t p = 0;
    while (t0 < t1) {  // the chunk's tasks, part by part
      while (t0 >= first[p + 1]) ++p;
      const int64_t t_end = std::min(t1, first[p + 1]);
      const SkinnyPart& q = parts[p];
      rows_range<L>(M, K, alpha, A, lda, static_cast<const typename L::T*>(q.W), q.ldw, beta, q.C,
                    q.ldc, (t0 - first[p]) * rows_per[p],
                    std::min(q.N, (t_end - first[p]) * rows_per[p]));
      t0 = t_end;
    }
  });
}

template <class L>
void skinny(int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
            const typename L::T* W, int64_t ldw, float beta, float* C, int64_t ldc) {
  if (M <= 0 || N <= 0) return;
  const SkinnyPart part{W, N, ldw, C, ldc};
  skinny_parts<L>(M, K, alpha, A, lda, &part, 1, beta);
}

}  // namespace

void skinny_gemm_nt(int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
                    const float* W, int64_t ldw, float beta, float* C, int64_t ldc) {
  skinny<F32Rows>(M, N, K, alpha, A, lda, W, ldw, beta, C, ldc);
}

void skinny_gemm_nt_lowp(int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
                         const uint16_t* W, LowpType t, int64_t ldw, float beta, float* C,
                         int64_t ldc) {
  if (t == LowpType::BF16)
    skinny<Bf16Rows>(M, N, K, alpha, A, lda, W, ldw, beta, C, ldc);
  else
    skinny<F16Rows>(M, N, K, alpha, A, lda, W, ldw, beta, C, ldc);
}

void skinny_gemm_nt_parts(int64_t M, int64_t K, const float* A, int64_t lda,
                          const SkinnyPart* parts, int64_t n_parts) {
  skinny_parts<F32Rows>(M, K, 1.0f, A, lda, parts, n_parts, 0.0f);
}

void skinny_gemm_nt_parts_lowp(int64_t M, int64_t K, const float* A, int64_t lda,
                               const SkinnyPart* parts, int64_t n_parts, LowpType t) {
  if (t == LowpType::BF16)
    skinny_parts<Bf16Rows>(M, K, 1.0f, A, lda, parts, n_parts, 0.0f);
  else
    skinny_parts<F16Rows>(M, K, 1.0f, A, lda, parts, n_parts, 0.0f);
}

}  // namespace parallm::cpu
