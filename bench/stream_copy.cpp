// STREAM-style memory bandwidth of this machine: "copy" (a[i] = b[i]) over
// two arrays far larger than the last-level cache, split over the OpenMP
// threads (OMP_NUM_THREADS / --threads) by static schedule, so each thread
// copies the pages it first touched. Bytes are counted as STREAM counts them:
// 8 read + 8 written per double (the write-allocate reads of the destination
// are not counted). Reports the best of --reps copies, in GB/s (1e9 bytes),
// as one JSON line; bench/infer_bench.sh divides decode's weight traffic by it.
#include <fmt/core.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

namespace {
struct Opts {
  int64_t mib = 512;  // per array: 16x a 32 MiB L3
  int reps = 20;
  int threads = 0;
};

Opts parse(int argc, char** argv) {
  Opts o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    const long v = std::strtol(argv[i + 1], nullptr, 10);
    if (a == "--mib") o.mib = v;
    if (a == "--reps") o.reps = static_cast<int>(v);
    if (a == "--threads") o.threads = static_cast<int>(v);
  }
  return o;
}
}  // namespace

int main(int argc, char** argv) {
  const Opts o = parse(argc, argv);
  if (o.threads > 0) omp_set_num_threads(o.threads);
  const int64_t n = o.mib * (int64_t{1} << 20) / static_cast<int64_t>(sizeof(double));
  // new[] leaves the pages untouched, so the parallel fill below places them.
  std::unique_ptr<double[]> a(new double[static_cast<size_t>(n)]);
  std::unique_ptr<double[]> b(new double[static_cast<size_t>(n)]);
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    a[i] = 0.0;
    b[i] = static_cast<double>(i);
  }
  double best = 1e30;
  for (int r = 0; r < o.reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    double* dst = a.get();
    const double* src = b.get();
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) dst[i] = src[i];
    best = std::min(best,
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  // A check the compiler cannot drop the copy past.
  if (a[static_cast<size_t>(n - 1)] != static_cast<double>(n - 1)) return 1;
  const double bytes = 2.0 * static_cast<double>(n) * sizeof(double);
  fmt::print(
      "{{\"kernel\": \"copy\", \"threads\": {}, \"mib_per_array\": {}, \"reps\": {}, "
      "\"best_s\": {:.6f}, \"gb_s\": {:.2f}}}\n",
      omp_get_max_threads(), o.mib, o.reps, best, bytes / best / 1e9);
  return 0;
}
