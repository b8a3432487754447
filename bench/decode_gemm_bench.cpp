// The GEMMs of one decode step (M = 1..8 rows: one per sequence) at the
// benchmark models' shapes (bench/infer_bench.sh): oneDNN's dnnl_sgemm (the
// f32 path before the skinny kernel), the skinny kernel on f32 and on bf16
// weights, and the emulated bf16 GEMM (widen W to f32, then sgemm: the bf16
// path on CPUs without AVX512-BF16 before the skinny kernel). Weights are
// cycled through copies totalling > 256 MiB, so every call reads W from
// memory as decode does. Prints one line per (shape, M, kernel): microseconds
// per call and GB/s of weight bytes read (4 per element in f32, 2 in bf16),
// by wall time and by process CPU time (the fairer one at 1 thread under load).
// Usage: decode_gemm_bench [--threads N] [--reps R] [--only NAME]
#include <fmt/core.h>
#include <oneapi/dnnl/dnnl.h>

#include <time.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "base/rng.h"
#include "kernels/cpu/gemm_bf16.h"
#include "kernels/cpu/skinny_gemm.h"
#include "kernels/cpu/threads.h"
#include "tensor/allocator.h"

using namespace parallm;

namespace {
struct Shape {
  const char* name;
  int64_t K, N;  // in, out features
};

constexpr Shape kShapes[] = {
    {"gpt2.qkv", 768, 2304},     {"gpt2.attn_proj", 768, 768}, {"gpt2.fc", 768, 3072},
    {"gpt2.fc_proj", 3072, 768}, {"gpt2.lm_head", 768, 50257}, {"llama.kv", 768, 256},
    {"llama.gate", 768, 2048},   {"llama.down", 2048, 768},    {"llama.lm_head", 768, 32000},
};

// Process CPU time: on a shared machine it leaves out the time spent
// waiting for a core (comparable to wall time at 1 thread only).
double cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

int main(int argc, char** argv) {
  int threads = 2, reps = 30;
  std::string only;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--threads") threads = std::stoi(argv[i + 1]);
    if (a == "--reps") reps = std::stoi(argv[i + 1]);
    if (a == "--only") only = argv[i + 1];
  }
  cpu::set_num_threads(threads);
  Allocator alloc;
  for (const Shape& s : kShapes) {
    if (!only.empty() && std::string(s.name).find(only) == std::string::npos) continue;
    const int64_t elems = s.K * s.N;
    const int copies = static_cast<int>(std::max<int64_t>(1, (int64_t{256} << 20) / (4 * elems)));
    std::vector<std::vector<float>> w32(static_cast<size_t>(copies));
    std::vector<std::vector<uint16_t>> w16(static_cast<size_t>(copies));
    const uint64_t key = stream_key(7, s.name);
    for (int c = 0; c < copies; ++c) {
      w32[c].resize(static_cast<size_t>(elems));
      for (int64_t i = 0; i < elems; ++i) w32[c][i] = 0.02f * (2.0f * uniform_at(key, i) - 1.0f);
      w16[c].resize(static_cast<size_t>(elems));
      cpu::round_to_lowp(w16[c].data(), w32[c].data(), elems, cpu::LowpType::BF16);
    }
    cpu::LowpGemm emulated(cpu::LowpType::BF16, /*allow_native=*/false);
    for (int64_t M : {1, 2, 4, 8}) {
      std::vector<float> a(static_cast<size_t>(M * s.K), 0.5f), c(static_cast<size_t>(M * s.N));
      std::vector<uint16_t> a16(a.size());
      cpu::round_to_lowp(a16.data(), a.data(), M * s.K, cpu::LowpType::BF16);
      struct Kernel {
        const char* name;
        int bytes;
        bool skinny;
      };
      std::vector<Kernel> kernels = {{"dnnl_sgemm f32", 4, false},
                                     {"skinny f32", 4, true},
                                     {"skinny bf16", 2, true},
                                     {"emulated bf16", 2, false}};
      // Round-robin over the kernels within each repetition, so that a change
      // of load on a shared machine hits them alike; best wall and CPU time.
      std::vector<double> best(kernels.size(), 1e30), best_cpu(kernels.size(), 1e30);
      for (int r = 0; r < reps; ++r)
        for (size_t ki = 0; ki < kernels.size(); ++ki) {
          const int cp = static_cast<int>((r * kernels.size() + ki) % copies);
          const double t0 = now_s(), c0 = cpu_s();
          const std::string n = kernels[ki].name;
          if (n == "dnnl_sgemm f32")
            dnnl_sgemm('N', 'T', M, s.N, s.K, 1.0f, a.data(), s.K, w32[cp].data(), s.K, 0.0f,
                       c.data(), s.N);
          else if (n == "skinny f32")
            cpu::skinny_gemm_nt(M, s.N, s.K, 1.0f, a.data(), s.K, w32[cp].data(), s.K, 0.0f,
                                c.data(), s.N);
          else if (n == "skinny bf16")
            cpu::skinny_gemm_nt_lowp(M, s.N, s.K, 1.0f, a.data(), s.K, w16[cp].data(),
                                     cpu::LowpType::BF16, s.K, 0.0f, c.data(), s.N);
          else
            emulated.gemm(false, true, M, s.N, s.K, a16.data(), s.K, w16[cp].data(), s.K, 0.0f,
                          c.data(), s.N, alloc);
          best[ki] = std::min(best[ki], now_s() - t0);
          best_cpu[ki] = std::min(best_cpu[ki], cpu_s() - c0);
        }
      for (size_t ki = 0; ki < kernels.size(); ++ki)
        fmt::print("{:<15} M {}  {:<15} {:9.1f} us {:6.2f} GB/s | CPU {:9.1f} us {:6.2f} GB/s\n",
                   s.name, M, kernels[ki].name, best[ki] * 1e6,
                   static_cast<double>(elems) * kernels[ki].bytes / best[ki] / 1e9,
                   best_cpu[ki] * 1e6,
                   static_cast<double>(elems) * kernels[ki].bytes / best_cpu[ki] / 1e9);
    }
  }
  return 0;
}
