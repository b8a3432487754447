// The pieces the two task kinds of CPU paged attention share (internal to
// paged_attention*.cpp): the pool geometry, per-thread scratch, the
// exponentiation of a tile's scores, and the Direct path's tasks
// (paged_attention_direct.cpp), which the driver in paged_attention.cpp
// builds and runs beside the Gemm path's. KV is the pools' element type:
// T itself, or uint16_t (16-bit values of Geometry::lowp, widened on read).
#pragma once
#include <algorithm>
#include <bit>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <vector>

#ifdef __F16C__
#include <immintrin.h>
#endif

#include "kernels/cpu/paged_attention.h"
#include "kernels/cpu/vec_math.h"
#include "tensor/half.h"

namespace parallm::cpu::paged {

// Where things are: q's and the pool's row strides, the kv group size, the
// two task kinds' tile lengths (whole blocks), the window and block table.
struct Geometry {
  const PagedAttnDims& d;
  int64_t group, ldq, ldk, tile;
  int64_t split_tile;  // keys per Direct task (whole blocks)
  LowpType lowp = LowpType::BF16;  // what 16-bit pools hold (unused for T pools)
  // The first key position that the query at position pos sees.
  int64_t first(int64_t pos) const {
    return d.window > 0 ? std::max<int64_t>(0, pos - d.window + 1) : 0;
  }
  int64_t k_off(const PagedSeq& s, int64_t j, int64_t g) const {
    const int64_t phys = s.blocks[j / d.block_size];
    return ((phys * d.block_size + j % d.block_size) * d.Hkv + g) * d.D;
  }
};

// One thread's scratch: tile scores (s), the Gemm path's running state and
// copied key/value tiles, and each query row's visible keys.
template <class T>
struct Workspace {
  std::vector<T> s, acc, m, kt, vt;
  std::vector<T> wide;  // Direct path over 16-bit pools: a group's token rows, widened
  std::vector<double> l;
  std::vector<int64_t> a, c;  // each row sees keys [a, c) of the current tile
};

// dst[0, n) = the pool values src[0, n) as T: a copy for a T pool, else
// 16-bit values widened (exactly: bf16 is f32's top half, every f16 is an f32).
template <class T, class KV>
inline void load_row(T* __restrict dst, const KV* __restrict src, int64_t n, LowpType t) {
  if constexpr (std::is_same_v<KV, T>) {
    std::copy_n(src, n, dst);
  } else if constexpr (std::is_same_v<T, float> && std::is_same_v<KV, uint16_t>) {
    if (t == LowpType::BF16) {
#pragma omp simd
      for (int64_t e = 0; e < n; ++e)
        dst[e] = std::bit_cast<float>(static_cast<uint32_t>(src[e]) << 16);
      return;
    }
    int64_t e = 0;
#ifdef __F16C__
    for (; e + 8 <= n; e += 8)
      _mm256_storeu_ps(dst + e,
                       _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + e))));
#endif
    for (; e < n; ++e) dst[e] = f16_to_f32(src[e]);
  } else {
    static_assert(std::is_same_v<KV, T>, "16-bit pools are read into float");
  }
}

// s[0, c) = exp(s - m_new) with m_new = max(floor, max of s); returns m_new
// and the new values' sum.
template <class T>
[[gnu::noinline]] inline T exp_shifted(T* s, int64_t c, T floor, double& sum) {
  T mx = s[0];
#pragma omp simd reduction(max : mx)
  for (int64_t j = 0; j < c; ++j) mx = s[j] > mx ? s[j] : mx;
  const T m_new = std::max(floor, mx);
#pragma omp simd
  for (int64_t j = 0; j < c; ++j) s[j] = exp_t<T>(s[j] - m_new);
  sum = 0.0;
#pragma omp simd reduction(+ : sum)
  for (int64_t j = 0; j < c; ++j) sum += s[j];
  return m_new;
}

// A Direct path task: every query row and head of sequence `seq` over tile
// keys [j0, j0 + tk); its Tq * Hq rows' partial results go to slots
// slot .. slot + Tq * Hq - 1 (row-major: query row, then head).
struct SplitTask {
  int64_t seq, row0;
  int64_t j0, tk;
  int64_t slot;
};

// The Direct tasks [p0, p1) of one sequence, whose `rows` = Tq * Hq slots
// each are merged into q's rows from row0.
struct SplitMerge {
  int64_t row0, rows, p0, p1;
};

// Per slot: the tile's max score, sum of exp(score - max) and unnormalised
// output (D values). Not zero-filled here: each task sets its own slots, in
// the thread that then reads them.
template <class T>
struct Partials {
  explicit Partials(int64_t slots, int64_t D)
      : m(new T[static_cast<size_t>(slots)]),
        acc(new T[static_cast<size_t>(slots * D)]),
        l(new double[static_cast<size_t>(slots)]) {}
  std::unique_ptr<T[]> m, acc;
  std::unique_ptr<double[]> l;
};

// Runs Direct task t of sequence s (see paged_attention_direct.cpp).
template <class T, class KV>
void split_task(const SplitTask& t, const PagedSeq& s, const Geometry& G, const T* q, const KV* kp,
                const KV* vp, T scale, Partials<T>& P, Workspace<T>& w);

// Combines the tiles of one sequence's rows (tasks [p0, p1), in tile order)
// into out and lse.
template <class T>
void merge_rows(const SplitMerge& mg, const std::vector<SplitTask>& splits, const Geometry& G,
                const Partials<T>& P, T* out, T* lse);

}  // namespace parallm::cpu::paged
