// Embedding lookup and its gradient over a vocab shard [row_begin,
// row_begin + rows). Backward gives each thread whole column blocks and walks
// the tokens in order, so repeated tokens are summed in token order: the
// result is bitwise independent of thread count, with no atomics or locks.
#include "kernels/cpu/embedding.h"

#include <algorithm>
#include <cstring>

#include <omp.h>

namespace parallm::cpu {

namespace {

constexpr int64_t kParallelMin = 16384;  // elements

inline bool in_shard(int32_t tok, int64_t row_begin, int64_t rows) {
  return tok >= row_begin && tok < row_begin + rows;
}

}  // namespace

template <class T>
void embedding_forward(T* out, const int32_t* tokens, const T* table, int64_t N, int64_t C,
                       int64_t row_begin, int64_t rows, bool accumulate) {
#pragma omp parallel for schedule(static) if (N * C > kParallelMin)
  for (int64_t n = 0; n < N; ++n) {
    T* o = out + n * C;
    const int32_t tok = tokens[n];
    if (!in_shard(tok, row_begin, rows)) {
      if (!accumulate) std::fill(o, o + C, T(0));
      continue;
    }
    const T* src = table + (tok - row_begin) * C;
    if (accumulate) {
#pragma omp simd
      for (int64_t j = 0; j < C; ++j) o[j] += src[j];
    } else {
      std::memcpy(o, src, static_cast<size_t>(C) * sizeof(T));
    }
  }
}

template <class T>
void embedding_backward(T* dtable, const int32_t* tokens, const T* dout, int64_t N, int64_t C,
                        int64_t row_begin, int64_t rows) {
  // The block width only decides which thread owns a column, never the order
  // of a sum, so it may follow the thread count: ~4 blocks per thread.
  const int64_t threads = omp_get_max_threads();
  const int64_t block = std::clamp<int64_t>((C / (4 * threads) + 15) / 16 * 16, 16, 256);
  const int64_t nblocks = (C + block - 1) / block;
#pragma omp parallel for schedule(static) if (N * C > kParallelMin)
  for (int64_t b = 0; b < nblocks; ++b) {
    const int64_t c0 = b * block, c1 = std::min(C, c0 + block);
    for (int64_t n = 0; n < N; ++n) {
      const int32_t tok = tokens[n];
      if (!in_shard(tok, row_begin, rows)) continue;
      T* d = dtable + (tok - row_begin) * C;
      const T* g = dout + n * C;
#pragma omp simd
      for (int64_t j = c0; j < c1; ++j) d[j] += g[j];
    }
  }
}

#define PX_INSTANTIATE(T)                                                                      \
  template void embedding_forward<T>(T*, const int32_t*, const T*, int64_t, int64_t, int64_t,  \
                                     int64_t, bool);                                           \
  template void embedding_backward<T>(T*, const int32_t*, const T*, int64_t, int64_t, int64_t, \
                                      int64_t);
PX_INSTANTIATE(float)
PX_INSTANTIATE(double)
#undef PX_INSTANTIATE

}  // namespace parallm::cpu
