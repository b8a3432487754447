// Grouped expert GEMM (kernels/cpu/grouped_gemm.h) against a loop of
// per-expert GEMMs and against one dense GEMM over the same rows: the first
// linear of 8 experts (C -> I) on the rows top-2 routing gives them, even or
// skewed (one expert empty, one with half the rows). docs/moe.md quotes it.
// usage: moe_gemm_bench [tokens] [C] [I] [threads]
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "bench_timing.h"
#include "kernels/cpu/grouped_gemm.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/threads.h"

using namespace parallm;

int main(int argc, char** argv) {
  const int64_t tokens = argc > 1 ? std::atoll(argv[1]) : 2048;
  const int64_t C = argc > 2 ? std::atoll(argv[2]) : 512, I = argc > 3 ? std::atoll(argv[3]) : 2048;
  cpu::set_num_threads(argc > 4 ? std::atoi(argv[4]) : 0);
  const int64_t E = 8, M = tokens * 2;  // top-2
  const auto x = bench::random_vec(M * C, "x");
  const auto w = bench::random_vec(E * I * C, "w");
  std::vector<float> out(M * I);
  std::printf("tokens %lld (rows %lld), C %lld, I %lld, %d threads\n", (long long)tokens,
              (long long)M, (long long)C, (long long)I, cpu::num_threads());
  const double dense = bench::median_ms(
      5, [&] { cpu::linear_forward<float>(out.data(), x.data(), w.data(), nullptr, M, C, I); });
  std::printf("%-30s %8.2f ms\n", "one dense GEMM, all rows", dense);
  for (const bool skewed : {false, true}) {
    std::vector<int64_t> off(E + 1, 0);
    for (int64_t e = 0; e < E; ++e) {
      int64_t n = M / E;
      if (skewed) n = e == 0 ? M / 2 : e == 1 ? 0 : (M - M / 2) / (E - 2);
      off[e + 1] = off[e] + n;
    }
    off[E] = M;
    const double grouped = bench::median_ms(5, [&] {
      cpu::grouped_linear_forward(out.data(), x.data(), w.data(), nullptr, off.data(), E, C, I);
    });
    const double loop = bench::median_ms(5, [&] {
      cpu::grouped_linear_forward_loop(out.data(), x.data(), w.data(), nullptr, off.data(), E, C,
                                       I);
    });
    std::printf("%-8s grouped %8.2f ms   loop %8.2f ms   (dense %.2f)\n",
                skewed ? "skewed" : "even", grouped, loop, dense);
  }
  return 0;
}
