#include "plan/flops.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "ops/lowp.h"
#include "ops/matmul.h"
#include "plan/lora_memory.h"

namespace parallm {

int64_t block_matmul_parameters(const ModelConfig& c) {
  const int64_t attn = c.hidden * c.q_dim() + 2 * c.hidden * c.kv_dim() + c.q_dim() * c.hidden;
  const int64_t mlp = (c.uses_swiglu() ? 3 : 2) * c.hidden * c.intermediate;
  const int64_t expert =
      (c.uses_swiglu() ? 3 : 2) * c.hidden * c.moe.expert_intermediate(c.intermediate);
  // A shared expert (and its gate) runs for every token of an MoE layer.
  const int64_t shared = (c.uses_swiglu() ? 3 : 2) * c.hidden * c.moe.shared_intermediate +
                         (c.moe.shared_expert_gate ? c.hidden : 0);
  int64_t n = 0;
  for (int64_t l = 0; l < c.n_layers; ++l)  // an MoE layer: router + the top-k experts a token uses
    n += attn + (c.moe.is_moe_layer(l) ? c.moe.num_experts * c.hidden + c.moe.topk * expert + shared
                                       : mlp);
  return n;
}

int64_t matmul_parameters(const ModelConfig& c) {
  return block_matmul_parameters(c) + c.vocab_size * c.hidden;  // + LM head
}

namespace {
// L * H * Q * T: one attention matmul's (QK^T or PV) forward FLOPs per token, halved.
double lhqt(const ModelConfig& c, int64_t T) {
  return static_cast<double>(c.n_layers) * static_cast<double>(c.n_heads) *
         static_cast<double>(c.head_dim) * static_cast<double>(T);
}
}  // namespace

int64_t lora_matmul_parameters(const ModelConfig& c) {
  if (!c.lora.enabled()) return 0;
  // The run's kinds (GPT-2 names its MLP linears fc / proj) as the memory
  // model's targets (up / down), so both count the same adapters.
  LoraTargets t;
  const bool all = std::ranges::count(c.lora.targets, std::string(kLoraAllLinear)) > 0;
  if (all) {
    t = LoraTargets::all_linear();
  } else {
    for (LoraTarget k : LoraTargets::all_linear().list()) {
      const std::string name(lora_target_name(k));
      const bool gpt2_alias = (k == LoraTarget::Up && c.lora.targets_kind("fc")) ||
                              (k == LoraTarget::Down && c.lora.targets_kind("proj"));
      if (c.lora.targets_kind(name) || gpt2_alias) t.add(k);
    }
  }
  return lora_adapter_parameters(c, c.lora.rank, t);
}

double training_flops_per_token(const ModelConfig& c, int64_t T) {
  const double n = static_cast<double>(matmul_parameters(c));
  if (!c.lora.enabled()) return 6.0 * n + 12.0 * lhqt(c, T);
  // The frozen base runs forward and passes input gradients back (4N) but
  // never forms its weight gradients; adapters cost 6 per parameter like any
  // trained weight; the attention core is unchanged.
  return 4.0 * n + 6.0 * static_cast<double>(lora_matmul_parameters(c)) + 12.0 * lhqt(c, T);
}

double recompute_flops_per_token(const ModelConfig& c, int64_t T, Recompute mode) {
  switch (mode) {
    case Recompute::None:
      return 0.0;
    case Recompute::Selective:
      return 4.0 * lhqt(c, T);
    case Recompute::Full:  // the blocks' adapters run forward again too
      return 2.0 * static_cast<double>(block_matmul_parameters(c) + lora_matmul_parameters(c)) +
             4.0 * lhqt(c, T);
  }
  return 0.0;
}

double hardware_flops_per_token(const ModelConfig& c, int64_t T, Recompute mode) {
  return training_flops_per_token(c, T) + recompute_flops_per_token(c, T, mode);
}

double parallm_recompute_flops_per_token(const ModelConfig& c, int64_t T, Recompute mode) {
  return mode == Recompute::Full ? recompute_flops_per_token(c, T, mode) : 0.0;
}

double parallm_hardware_flops_per_token(const ModelConfig& c, int64_t T, Recompute mode) {
  return training_flops_per_token(c, T) + parallm_recompute_flops_per_token(c, T, mode);
}

double flops_utilisation(double tokens_per_s, double flops_per_token, double peak, int ranks) {
  if (peak <= 0 || ranks <= 0) return 0.0;
  return tokens_per_s * flops_per_token / (peak * ranks);
}

double measure_gemm_peak_flops(Precision precision, bool allow_native_lowp) {
  const int64_t n = 1024;
  std::vector<float> a(n * n, 0.5f), b(n * n, 0.25f), out(n * n);
  std::unique_ptr<ops::LowpGemm> lowp;
  std::vector<uint16_t> a16(n * n), b16(n * n);
  Allocator scratch;
  if (precision != Precision::FP32) {
    const auto t = precision == Precision::BF16 ? ops::LowpType::BF16 : ops::LowpType::F16;
    lowp = std::make_unique<ops::LowpGemm>(t, allow_native_lowp);
    ops::round_to_lowp(ops::Stream::host(), a16.data(), a.data(), n * n, t);
    ops::round_to_lowp(ops::Stream::host(), b16.data(), b.data(), n * n, t);
  }
  double best = 0.0;
  for (int rep = 0; rep < 4; ++rep) {
    auto t0 = std::chrono::steady_clock::now();
    if (lowp)
      ops::lowp_gemm(ops::Stream::host(), *lowp, false, false, n, n, n, a16.data(), n, b16.data(),
                     n, 0.0f, out.data(), n, scratch);
    else
      ops::gemm(ops::Stream::host(), false, false, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f,
                out.data(), n);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (rep > 0) best = std::max(best, 2.0 * n * n * n / s);  // first run warms caches/threads
  }
  return best;
}

}  // namespace parallm
