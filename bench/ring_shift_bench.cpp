// The time of one ring attention hop with nothing else running: each of the
// N ranks (mpirun -np N) posts a receive from the rank before and a send of
// BYTES to the rank after, as ring_attention.cpp does, and waits for both.
// A barrier (microseconds, inside the timing) starts every repetition so
// that no rank waits for a late peer.
// Rank 0 prints one JSON line: the median hop in ms and the rate in GB/s
// (bytes one rank sends / hop time). bench/cp_bench.sh divides a step's ring
// bytes by this rate to get the transfer time attention had to hide.
// Usage: mpirun -np N ring_shift_bench BYTES [REPS]
#include <fmt/core.h>

#include <cstdlib>
#include <vector>

#include "bench_timing.h"
#include "comm/mpi/mpi_runtime.h"

int main(int argc, char** argv) {
  using namespace parallm;
  if (argc < 2) {
    fmt::print(stderr, "usage: mpirun -np N {} BYTES [REPS]\n", argv[0]);
    return 2;
  }
  const long long bytes = std::atoll(argv[1]);
  const int reps = argc > 2 ? std::atoi(argv[2]) : 20;
  if (bytes <= 0 || bytes % 4 != 0 || reps <= 0) {
    fmt::print(stderr, "ring_shift_bench: BYTES must be a positive multiple of 4 (got {}), "
                       "REPS positive (got {})\n", argv[1], reps);
    return 2;
  }
  return comm::run_mpi_job([&](comm::MpiRuntime& rt) {
    const auto world = rt.world();
    const int n = world->size(), me = world->rank();
    const size_t count = static_cast<size_t>(bytes / 4);
    std::vector<float> out(count, 1.0f), in(count);
    const double ms = bench::median_ms(reps, [&] {
      world->barrier();
      if (n == 1) return;
      comm::Work received = world->recv_async(in.data(), count, DType::F32, (me + n - 1) % n, 11);
      comm::Work sent = world->send_async(out.data(), count, DType::F32, (me + 1) % n, 11);
      received.wait();
      sent.wait();
    });
    if (me == 0)
      fmt::print("{{\"ranks\": {}, \"bytes\": {}, \"hop_ms\": {:.4f}, \"gb_per_s\": {:.3f}}}\n", n,
                 bytes, ms, static_cast<double>(bytes) / (ms * 1e6));
    return 0;
  });
}
