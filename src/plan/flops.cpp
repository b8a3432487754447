#include "plan/flops.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include "kernels/cpu/matmul.h"

namespace parallm {

int64_t matmul_parameters(const ModelConfig& c) {
  int64_t per = c.hidden * c.q_dim() + 2 * c.hidden * c.kv_dim() + c.q_dim() * c.hidden;
  per += (c.uses_swiglu() ? 3 : 2) * c.hidden * c.intermediate;
  return c.n_layers * per + c.vocab_size * c.hidden;  // + LM head
}

double training_flops_per_token(const ModelConfig& c, int64_t T) {
  return 6.0 * static_cast<double>(matmul_parameters(c)) +
         12.0 * static_cast<double>(c.n_layers * c.n_heads * c.head_dim * T);
}

double measure_gemm_peak_flops() {
  const int64_t n = 1024;
  std::vector<float> a(n * n, 0.5f), b(n * n, 0.25f), out(n * n);
  double best = 0.0;
  for (int rep = 0; rep < 4; ++rep) {
    auto t0 = std::chrono::steady_clock::now();
    cpu::gemm<float>(false, false, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, out.data(), n);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (rep > 0) best = std::max(best, 2.0 * n * n * n / s);  // first run warms caches/threads
  }
  return best;
}

}  // namespace parallm
