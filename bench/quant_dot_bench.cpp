// The quantised decode GEMVs alone (kernels/cpu/quant_gemm.h): for each GGUF
// block type and layout (the file's rows, packed for AVX2 or VNNI), M = 1
// (and 4, 8) activation rows times a weight the shape of the LLaMA bench
// model's LM head (32000 x 768) or MLP (2048 x 768), weights cycled through
// copies totalling > 256 MiB so each call reads W from memory as decode
// does. Prints one JSON line per case: microseconds per call and GB/s of
// weight bytes read, by wall time, with the thread count. Decode is a read
// of the weights: compare GB/s with bench/stream_copy's read bandwidth.
// Usage: quant_dot_bench [--threads N] [--reps R]
#include <fmt/core.h>

#include <string>
#include <vector>

#include "bench_timing.h"
#include "kernels/cpu/quant_gemm.h"
#include "kernels/cpu/threads.h"
#include "tensor/allocator.h"

using namespace parallm;
using namespace parallm::cpu;

int main(int argc, char** argv) {
  int threads = 2, reps = 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--threads") threads = std::stoi(argv[i + 1]);
    if (a == "--reps") reps = std::stoi(argv[i + 1]);
  }
  set_num_threads(threads);
  Allocator alloc;
  struct Shape {
    const char* name;
    int64_t N, K;
  };
  const Shape shapes[] = {{"llama.lm_head", 32000, 768}, {"llama.gate", 2048, 768}};
  const struct {
    QuantType t;
    QuantLayout l;
    const char* layout;
  } cases[] = {{QuantType::Q8_0, QuantLayout::kRows, "rows"},
               {QuantType::Q8_0, QuantLayout::kAuto, "packed"},
               {QuantType::Q4_0, QuantLayout::kRows, "rows"},
               {QuantType::Q4_0, QuantLayout::kAuto, "packed"},
               {QuantType::Q4_K, QuantLayout::kRows, "rows"},
               {QuantType::Q4_K, QuantLayout::kAuto, "packed"},
               {QuantType::Q6_K, QuantLayout::kRows, "rows"}};
  for (const Shape& s : shapes) {
    const std::vector<float> w = bench::random_vec(static_cast<size_t>(s.N * s.K), "w");
    for (const auto& c : cases) {
      const int64_t one = QuantWeight::quantize(alloc, c.t, w.data(), s.N, s.K, c.l).stored_bytes();
      const int copies = static_cast<int>(std::max<int64_t>(1, (256 << 20) / one + 1));
      std::vector<QuantWeight> ws;
      for (int i = 0; i < copies; ++i)
        ws.push_back(QuantWeight::quantize(alloc, c.t, w.data(), s.N, s.K, c.l));
      for (int64_t M : {1, 4, 8}) {
        const std::vector<float> x = bench::random_vec(static_cast<size_t>(M * s.K), "x");
        std::vector<float> out(static_cast<size_t>(M * s.N));
        int next = 0;
        const double ms = bench::median_ms(reps, [&] {
          quant_linear_forward(alloc, out.data(), x.data(), ws[next], nullptr, M);
          next = (next + 1) % copies;
        });
        fmt::print(
            "{{\"shape\": \"{}\", \"type\": \"{}\", \"layout\": \"{}\", \"path\": \"{}\", "
            "\"M\": {}, \"threads\": {}, \"us\": {:.1f}, \"gb_s\": {:.2f}}}\n",
            s.name, quant_traits(c.t).name, c.layout,
            quant_dot_path_name(quant_dot_path()), M, threads, ms * 1e3,
            static_cast<double>(one) / (ms * 1e-3) / 1e9);
      }
    }
  }
}
