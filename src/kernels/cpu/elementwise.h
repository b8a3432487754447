// Element-wise maps over [0, n), split statically over the OpenMP threads
// when n is large, each thread's range one vectorised loop. Below the
// threshold no parallel region is made at all: decode's maps are a few
// thousand elements, where a region (even a one-thread `if (false)` one)
// would only add its set-up to a loop of a microsecond or two.
#pragma once
#include <omp.h>

#include <algorithm>
#include <cstdint>

namespace parallm::cpu {

// f(i) for i in [i0, i1), vectorised; out of line, so the serial call and
// the threads' calls share one copy.
template <class F>
[[gnu::noinline]] void simd_range(int64_t i0, int64_t i1, const F& f) {
#pragma omp simd
  for (int64_t i = i0; i < i1; ++i) f(i);
}

// f(i) for every i in [0, n): on all threads, each a contiguous range (whole
// cache lines where it can), when n >= parallel_min; on this thread otherwise.
template <class F>
void for_each_index(int64_t n, int64_t parallel_min, const F& f) {
  if (n < parallel_min) {
    simd_range(0, n, f);
    return;
  }
#pragma omp parallel
  {
    const int64_t nt = omp_get_num_threads(), t = omp_get_thread_num();
    const int64_t per = ((n + nt - 1) / nt + 15) / 16 * 16;
    const int64_t i0 = std::min(n, t * per), i1 = std::min(n, i0 + per);
    simd_range(i0, i1, f);
  }
}

}  // namespace parallm::cpu
