// STREAM-style memory bandwidth of this machine: "copy" (a[i] = b[i]) over
// two arrays far larger than the last-level cache, split over the OpenMP
// threads (OMP_NUM_THREADS / --threads) by static schedule, so each thread
// copies the pages it first touched. Bytes are counted as STREAM counts them:
// 8 read + 8 written per double (the write-allocate reads of the destination
// are not counted, so the memory moves 1.5x what is reported). Also "read"
// (a sum over b: 8 bytes per double, nothing written), the access pattern of
// decode, which streams the weights and writes almost nothing, and "read4"
// (the same sum with each thread's part cut in 4 stretches read side by
// side: the skinny decode GEMM's pattern, kernels/cpu/skinny_gemm.cpp; one
// core keeps more reads in flight over 4 streams than over 1). Reports the
// best of --reps runs of each, in GB/s (1e9 bytes), one JSON line per kernel;
// bench/infer_bench.sh divides decode's weight traffic by both. --huge 1
// backs the arrays with transparent huge pages (madvise before the first
// touch) and names the kernels "copy_huge" and "read_huge": parallm's decode
// reads its weights from huge pages (infer/huge_pages.h), so this is the
// same test under the same paging.
#include <fmt/core.h>
#include <omp.h>
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

namespace {
struct Opts {
  int64_t mib = 512;  // per array: 16x a 32 MiB L3
  int reps = 20;
  int threads = 0;
  bool huge = false;
};

Opts parse(int argc, char** argv) {
  Opts o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    const long v = std::strtol(argv[i + 1], nullptr, 10);
    if (a == "--mib") o.mib = v;
    if (a == "--reps") o.reps = static_cast<int>(v);
    if (a == "--threads") o.threads = static_cast<int>(v);
    if (a == "--huge") o.huge = v != 0;
  }
  return o;
}
double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
// Asks for huge pages over the whole 2 MiB pages of [p, p + bytes).
void advise_huge(void* p, size_t bytes) {
  constexpr uintptr_t kHuge = uintptr_t{2} << 20;
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(p) + kHuge - 1) & ~(kHuge - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + bytes) & ~(kHuge - 1);
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
}
}  // namespace

int main(int argc, char** argv) {
  const Opts o = parse(argc, argv);
  if (o.threads > 0) omp_set_num_threads(o.threads);
  const int64_t n = o.mib * (int64_t{1} << 20) / static_cast<int64_t>(sizeof(double));
  // new[] leaves the pages untouched, so the parallel fill below places them.
  std::unique_ptr<double[]> a(new double[static_cast<size_t>(n)]);
  std::unique_ptr<double[]> b(new double[static_cast<size_t>(n)]);
  if (o.huge)
    for (double* p : {a.get(), b.get()}) advise_huge(p, static_cast<size_t>(n) * sizeof(double));
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    a[i] = 0.0;
    b[i] = static_cast<double>(i);
  }
  double best_copy = 1e30, best_read = 1e30, best_read4 = 1e30, sink = 0.0;
  for (int r = 0; r < o.reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    double* dst = a.get();
    const double* src = b.get();
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) dst[i] = src[i];
    best_copy = std::min(best_copy, seconds_since(t0));
    t0 = std::chrono::steady_clock::now();
    double s = 0.0;
#pragma omp parallel reduction(+ : s)
    {
      // The static split of the copy loop (same pages per thread), and 16
      // partial sums: independent add chains, so latency never limits it.
      const int64_t nt = omp_get_num_threads(), t = omp_get_thread_num();
      const int64_t i0 = n * t / nt, i1 = n * (t + 1) / nt;
      double acc[16] = {};
      int64_t i = i0;
      for (; i + 16 <= i1; i += 16)
        for (int j = 0; j < 16; ++j) acc[j] += src[i + j];
      for (; i < i1; ++i) acc[0] += src[i];
      for (double x : acc) s += x;
    }
    best_read = std::min(best_read, seconds_since(t0));
    sink += s;
    t0 = std::chrono::steady_clock::now();
    s = 0.0;
#pragma omp parallel reduction(+ : s)
    {
      const int64_t nt = omp_get_num_threads(), t = omp_get_thread_num();
      const int64_t i0 = n * t / nt, i1 = n * (t + 1) / nt, q = (i1 - i0) / 4;
      double acc[16] = {};
      int64_t i = 0;
      for (; i + 4 <= q; i += 4)
        for (int p = 0; p < 4; ++p)
          for (int j = 0; j < 4; ++j) acc[4 * p + j] += src[i0 + p * q + i + j];
      for (int p = 0; p < 4; ++p)
        for (int64_t k = i; k < q; ++k) acc[0] += src[i0 + p * q + k];
      for (int64_t k = i0 + 4 * q; k < i1; ++k) acc[0] += src[k];
      for (double x : acc) s += x;
    }
    best_read4 = std::min(best_read4, seconds_since(t0));
    sink += s;
  }
  // Checks the compiler cannot drop the loops past.
  if (a[static_cast<size_t>(n - 1)] != static_cast<double>(n - 1) || sink == 0.0) return 1;
  const double bytes = static_cast<double>(n) * sizeof(double);
  const std::string sfx = o.huge ? "_huge" : "";
  for (auto [name, t, per] : {std::tuple{"copy" + sfx, best_copy, 2.0},
                              {"read" + sfx, best_read, 1.0},
                              {"read4" + sfx, best_read4, 1.0}})
    fmt::print(
        "{{\"kernel\": \"{}\", \"threads\": {}, \"mib_per_array\": {}, \"reps\": {}, "
        "\"best_s\": {:.6f}, \"gb_s\": {:.2f}}}\n",
        name, omp_get_max_threads(), o.mib, o.reps, t, per * bytes / t / 1e9);
  return 0;
}
