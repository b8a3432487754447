// Skinny GEMM kernels (see skinny_gemm.h). AVX2 + FMA + F16C where the build
// has them: one W row at a time (so W is read as one sequential stream, which
// the hardware prefetcher follows best; stretches of rows are handed to the
// threads in shrinking chunks, run_tasks), each 16 of its values loaded and
// widened once (bf16: a 16-bit shift; f16: F16C) and multiplied into up to 4
// rows of A, two 8-wide accumulators per row. A portable loop otherwise.
// Several weights of one input (skinny_gemm_nt_parts) share one parallel
// region: their rows are one list of tasks.
// Invariant: C[m][n] depends on row n of W, row m of A and K only.
#include "kernels/cpu/skinny_gemm.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#define PX_SKINNY_AVX2 1
#include <immintrin.h>
#endif

#include <omp.h>

#include <algorithm>
#include <atomic>

#include "base/error.h"
#include "tensor/half.h"

namespace parallm::cpu {

namespace {

constexpr int64_t kGroup = 4;              // rows of A sharing each load of W (8 accumulators)
constexpr int64_t kTaskBytes = 16 << 10;  // W bytes per scheduling unit
constexpr int64_t kMinTasks = 16;         // ... but at least this many units
constexpr int64_t kMaxChunk = 16;         // units a thread takes at once, at most
constexpr int64_t kParallelMin = 1 << 15;  // W elements below which one thread does it all

// Element access per weight format: scalar, and 8 lanes widened to f32.
// kPrefetch: elements ahead of the loads to prefetch in software. Measured
// on AMD EPYC (Zen 3, AVX2), 2 threads, W from memory: f32 rows stream at
// full speed on the hardware prefetcher alone (a software prefetch cost
// 5-15%); 16-bit rows, slower to consume per byte, gained ~5% from one 2 KiB
// ahead.
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

#ifdef PX_SKINNY_AVX2
inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// out[m] = sum_k w[k] * a[m * lda + k] for m < MR: one W row, loaded once
// for all rows of A. Each out[m] is summed in the same order for every MR.
template <class L, int MR>
inline void dot_row(const typename L::T* w, const float* a, int64_t lda, int64_t K, float* out) {
  __m256 lo[MR], hi[MR];
  for (int m = 0; m < MR; ++m) lo[m] = hi[m] = _mm256_setzero_ps();
  int64_t k = 0;
  for (; k + 16 <= K; k += 16) {
    if constexpr (L::kPrefetch > 0)
      _mm_prefetch(reinterpret_cast<const char*>(w + k + L::kPrefetch), _MM_HINT_T0);
    const __m256 w0 = L::load8(w + k), w1 = L::load8(w + k + 8);
    for (int m = 0; m < MR; ++m) {
      lo[m] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(a + m * lda + k), lo[m]);
      hi[m] = _mm256_fmadd_ps(w1, _mm256_loadu_ps(a + m * lda + k + 8), hi[m]);
    }
  }
  if (k + 8 <= K) {
    const __m256 w0 = L::load8(w + k);
    for (int m = 0; m < MR; ++m)
      lo[m] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(a + m * lda + k), lo[m]);
    k += 8;
  }
  for (int m = 0; m < MR; ++m) {
    float s = hsum(_mm256_add_ps(lo[m], hi[m]));
    for (int64_t j = k; j < K; ++j) s += L::at(w + j) * a[m * lda + j];
    out[m] = s;
  }
}
#else
template <class L, int MR>
inline void dot_row(const typename L::T* w, const float* a, int64_t lda, int64_t K, float* out) {
  for (int m = 0; m < MR; ++m) {
    float lanes[8] = {};
    int64_t k = 0;
    for (; k + 8 <= K; k += 8)
      for (int j = 0; j < 8; ++j) lanes[j] += L::at(w + k + j) * a[m * lda + k + j];
    float s = 0.0f;
    for (int j = 0; j < 8; ++j) s += lanes[j];
    for (; k < K; ++k) s += L::at(w + k) * a[m * lda + k];
    out[m] = s;
  }
}
#endif

// Rows n0 .. n1 - 1 of C: rows of A in groups of up to kGroup, so W's row
// is read from memory once, and again from L1 only when M > kGroup.
template <class L>
void rows_range(int64_t M, int64_t K, float alpha, const float* A, int64_t lda,
                const typename L::T* W, int64_t ldw, float beta, float* C, int64_t ldc, int64_t n0,
                int64_t n1) {
  for (int64_t n = n0; n < n1; ++n) {
    for (int64_t m = 0; m < M; m += kGroup) {
      float out[kGroup];
      const float* a = A + m * lda;
      const typename L::T* w = W + n * ldw;
      const int64_t rows = std::min(kGroup, M - m);
      switch (rows) {
        case 1:
          dot_row<L, 1>(w, a, lda, K, out);
          break;
        case 2:
          dot_row<L, 2>(w, a, lda, K, out);
          break;
        case 3:
          dot_row<L, 3>(w, a, lda, K, out);
          break;
        default:
          dot_row<L, 4>(w, a, lda, K, out);
          break;
      }
      for (int64_t r = 0; r < rows; ++r) {  // beta 0: C is not read (it may hold NaN)
        float* c = C + (m + r) * ldc + n;
        *c = beta == 0.0f ? alpha * out[r] : alpha * out[r] + beta * *c;
      }
    }
  }
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

// Runs task(0 .. tasks - 1), in one parallel region when parallel. Each
// thread takes the next chunk of consecutive tasks (consecutive W rows: one
// stream) from a shared counter: a chunk is a 2 * threads-th of what is
// left, between 1 and kMaxChunk tasks. Large chunks while much is left
// (few hand-outs, long streams), small ones at the end (the threads finish
// within a few microseconds of each other, where 128 KiB tasks left one
// idle for half a task at each of a token's ~60 joins), and never more than
// kMaxChunk (256 KiB), so a thread that loses its core for a while on a
// shared machine holds up the others by one chunk at most.
template <class F>
void run_tasks(int64_t tasks, bool parallel, const F& task) {
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
      for (int64_t t = t0; t < t0 + chunk; ++t) task(t);
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
  run_tasks(tasks, work >= kParallelMin, [&](int64_t t) {
    int64_t p = 0;
    while (t >= first[p + 1]) ++p;
    const SkinnyPart& q = parts[p];
    const int64_t n0 = (t - first[p]) * rows_per[p];
    rows_range<L>(M, K, alpha, A, lda, static_cast<const typename L::T*>(q.W), q.ldw, beta, q.C,
                  q.ldc, n0, std::min(q.N, n0 + rows_per[p]));
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
