#include "plan/lora_memory.h"

#include <algorithm>

#include "base/error.h"
#include "ops/nf4.h"
#include "plan/memory_model.h"

namespace parallm {
namespace {

// One linear of a block on a tp rank: (in, out) of the whole layer, whether
// it is row-parallel (o, down) and its weight elements on the rank.
struct Linear {
  LoraTarget target;
  int64_t in, out;
  bool row_parallel;
};

std::vector<Linear> block_linears(const ModelConfig& m) {
  const int64_t C = m.hidden, Q = m.q_dim(), K = m.kv_dim(), I = m.intermediate;
  std::vector<Linear> out = {{LoraTarget::Q, C, Q, false},
                             {LoraTarget::K, C, K, false},
                             {LoraTarget::V, C, K, false},
                             {LoraTarget::O, Q, C, true}};
  if (m.uses_swiglu()) out.push_back({LoraTarget::Gate, C, I, false});
  out.push_back({LoraTarget::Up, C, I, false});
  out.push_back({LoraTarget::Down, I, C, true});
  return out;
}

void check_targets(const ModelConfig& m, const LoraTargets& t) {
  PX_CHECK(!t.empty(), "LoRA needs at least one target (--lora-targets q,v or all-linear)");
  PX_CHECK(!t.has(LoraTarget::Gate) || m.uses_swiglu() || t.is_all_linear(),
           "LoRA target 'gate' does not exist in a {} block (it has no gated MLP)",
           m.uses_swiglu() ? "LLaMA" : "GPT-2");
}

// Elements of a linear's weight on one tp rank (the layout's padding of
// key/value heads: each rank keeps ceil(kv / t) heads).
int64_t weight_on_rank(const ModelConfig& m, const Linear& l, int64_t t) {
  const bool kv = l.target == LoraTarget::K || l.target == LoraTarget::V;
  if (kv) return l.in * m.head_dim * ((m.n_kv_heads + t - 1) / t);
  return l.row_parallel ? (l.in + t - 1) / t * l.out : l.in * ((l.out + t - 1) / t);
}

}  // namespace

int64_t lora_adapter_parameters(const ModelConfig& m, int64_t rank, const LoraTargets& t) {
  check_targets(m, t);
  int64_t per_layer = 0;
  for (const Linear& l : block_linears(m))
    if (t.has(l.target)) per_layer += rank * (l.in + l.out);
  return per_layer * m.n_layers;
}

double nf4_tensor_bytes(int64_t n, bool double_quant) {
  return static_cast<double>(ops::nf4_storage_bytes(n, ops::kNf4BlockSize, double_quant)) +
         (double_quant ? 4.0 : 0.0);
}

LoraMemory lora_memory(const MemoryQuery& q) {
  const ModelConfig& m = q.model;
  const LoraQuery& lq = q.lora;
  check_targets(m, lq.targets);
  const int64_t t = q.tp, layers_here = (m.n_layers + q.pp - 1) / q.pp;
  LoraMemory r;
  double nf4_bytes_per_layer = 0;
  int64_t linear_per_layer = 0;
  for (const Linear& l : block_linears(m)) {
    const int64_t w = weight_on_rank(m, l, t);
    linear_per_layer += w;
    nf4_bytes_per_layer += nf4_tensor_bytes(w, lq.double_quant);
    if (!lq.targets.has(l.target)) continue;
    const bool kv = l.target == LoraTarget::K || l.target == LoraTarget::V;
    const int64_t out_here = kv ? m.head_dim * ((m.n_kv_heads + t - 1) / t) : (l.out + t - 1) / t;
    r.adapters_per_layer +=
        l.row_parallel ? lq.rank * ((l.in + t - 1) / t + l.out) : lq.rank * (l.in + out_here);
  }
  r.adapter_params = r.adapters_per_layer * layers_here;
  MemoryQuery base = q;
  base.lora = LoraQuery{};
  r.frozen_params = estimate_memory(base).params_per_rank;
  const double word = q.precision == Precision::FP32 ? 4.0 : 2.0;
  if (lq.qlora) {
    r.quantized_params = linear_per_layer * layers_here;
    r.quantized_bytes = nf4_bytes_per_layer * static_cast<double>(layers_here);
    r.frozen_bytes =
        r.quantized_bytes + word * static_cast<double>(r.frozen_params - r.quantized_params);
  } else {
    r.frozen_bytes = word * static_cast<double>(r.frozen_params);
  }
  return r;
}

void apply_lora(const MemoryQuery& q, MemoryBreakdown& r) {
  const LoraMemory lm = lora_memory(q);
  const double P = static_cast<double>(lm.adapter_params),
               shards = static_cast<double>(q.dp) * q.cp;
  auto shard = [&](double n, bool sharded) { return sharded ? n / shards : n; };
  const bool mixed = q.precision != Precision::FP32;
  const double word = mixed ? 2.0 : 4.0;
  const double master = mixed && !q.lora.qlora ? 4.0 : 0.0;
  r.frozen = lm.frozen_bytes;
  r.trainable_params = lm.adapter_params;
  r.parameters = shard(P, q.zero >= 3) * word;
  r.gradients = shard(P, q.zero >= 2) * word;
  r.optimizer =
      shard(P, q.zero >= 1) * (optimizer_state_bytes_per_element(q.optimizer, false) + master);
  r.communication = 0;
  if (shards > 1 && q.zero <= 1)
    r.communication += 2.0 * std::min(q.bucket_mb * 1024 * 1024, P * word);
  if (q.zero >= 3) r.communication += 2.0 * static_cast<double>(lm.adapters_per_layer) * word;
  if (q.pp > 1)
    r.communication +=
        2.0 * static_cast<double>(q.seq_len) / q.cp * q.micro_batch * q.model.hidden * word;
  int64_t targets = 0;
  for (const Linear& l : block_linears(q.model)) targets += q.lora.targets.has(l.target) ? 1 : 0;
  const double per_layer = static_cast<double>(q.seq_len) / q.cp * q.micro_batch *
                           static_cast<double>(q.lora.rank * targets) * word;
  const int64_t layers_here = (q.model.n_layers + q.pp - 1) / q.pp;
  if (q.recompute == Recompute::Full) {
    r.activations += per_layer;  // inside the one layer rebuilt at a time
  } else {
    r.activation_per_layer += per_layer;
    r.activations += per_layer * static_cast<double>(layers_here) * r.micro_batches_in_flight;
  }
}

}  // namespace parallm
