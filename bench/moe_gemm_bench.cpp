// Grouped expert GEMM (kernels/cpu/grouped_gemm.h) against a loop of
// per-expert GEMMs and against one dense GEMM over the same rows: the first
// linear of 8 experts (C -> I), forward and backward (input and weight
// gradients), on the rows top-2 routing gives them, even or skewed (one
// expert empty, one with half the rows). The variants run interleaved, one
// call each per repetition, and the medians are printed, so a disturbance
// of this shared machine hits all of them alike. docs/moe.md quotes it.
// usage: moe_gemm_bench [tokens] [C] [I] [threads] [reps] [experts]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "bench_timing.h"
#include "kernels/cpu/grouped_gemm.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/threads.h"

using namespace parallm;

namespace {

struct Variant {
  std::string name;
  std::function<void()> run;
  std::vector<double> ms;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t tokens = argc > 1 ? std::atoll(argv[1]) : 2048;
  const int64_t C = argc > 2 ? std::atoll(argv[2]) : 512, I = argc > 3 ? std::atoll(argv[3]) : 2048;
  cpu::set_num_threads(argc > 4 ? std::atoi(argv[4]) : 0);
  const int reps = argc > 5 ? std::atoi(argv[5]) : 7;
  const int64_t E = argc > 6 ? std::atoll(argv[6]) : 8, M = tokens * 2;  // top-2
  const auto x = bench::random_vec(M * C, "x");
  const auto w = bench::random_vec(E * I * C, "w");
  const auto dy = bench::random_vec(M * I, "dy");
  std::vector<float> out(M * I), dx(M * C), dw(E * I * C);
  std::vector<int64_t> even(E + 1, 0), skewed(E + 1, 0);
  for (int64_t e = 0; e < E; ++e) {
    even[e + 1] = even[e] + M / E;
    skewed[e + 1] = skewed[e] + (e == 0 ? M / 2 : e == 1 ? 0 : (M - M / 2) / (E - 2));
  }
  even[E] = skewed[E] = M;
  // The per-expert loop of the backward (the library keeps only the forward's).
  auto loop_backward = [&](const std::vector<int64_t>& off) {
    for (int64_t e = 0; e < E; ++e) {
      const int64_t r0 = off[e], rows = off[e + 1] - r0;
      if (rows > 0)
        cpu::linear_backward<float>(dx.data() + r0 * C, dw.data() + e * I * C, nullptr,
                                    dy.data() + r0 * I, x.data() + r0 * C, w.data() + e * I * C,
                                    rows, C, I);
    }
  };
  std::vector<Variant> vs = {
      {"dense fwd",
       [&] { cpu::linear_forward<float>(out.data(), x.data(), w.data(), nullptr, M, C, I); }},
      {"dense bwd",
       [&] {
         cpu::linear_backward<float>(dx.data(), dw.data(), nullptr, dy.data(), x.data(), w.data(),
                                     M, C, I);
       }},
  };
  for (const auto* off : {&even, &skewed}) {
    const std::string load = off == &even ? "even" : "skewed";
    vs.push_back({load + " grouped fwd", [&, off] {
                    cpu::grouped_linear_forward(out.data(), x.data(), w.data(), nullptr,
                                                off->data(), E, C, I);
                  }});
    vs.push_back({load + " loop fwd", [&, off] {
                    cpu::grouped_linear_forward_loop(out.data(), x.data(), w.data(), nullptr,
                                                     off->data(), E, C, I);
                  }});
    vs.push_back({load + " grouped bwd", [&, off] {
                    cpu::grouped_linear_backward(dx.data(), dw.data(), nullptr, dy.data(), x.data(),
                                                 w.data(), off->data(), E, C, I);
                  }});
    vs.push_back({load + " loop bwd", [&, off] { loop_backward(*off); }});
  }
  for (Variant& v : vs) v.run();  // warm-up: page faults, oneDNN kernels
  for (int r = 0; r < reps; ++r)
    for (Variant& v : vs) {
      const auto t0 = std::chrono::steady_clock::now();
      v.run();
      v.ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
  std::printf("tokens %lld (rows %lld), C %lld, I %lld, %d threads, median of %d\n",
              (long long)tokens, (long long)M, (long long)C, (long long)I, cpu::num_threads(),
              reps);
  for (const Variant& v : vs) {
    const double ms = median(v.ms);
    const double flops = 2.0 * M * C * I * (v.name.ends_with("bwd") ? 2 : 1);
    std::printf("%-20s %9.2f ms %8.1f GFLOP/s\n", v.name.c_str(), ms, flops / ms / 1e6);
  }
  return 0;
}
