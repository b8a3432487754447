#include "model/lora/qlora_base.h"

#include <algorithm>

#include "base/error.h"
#include "nn/lora_config.h"
#include "ops/nf4.h"
#include "parallel/tensor/gather_parameters.h"

namespace parallm {

bool is_block_linear_weight(const std::string& name) {
  if (!name.starts_with("layers.") || !name.ends_with(".weight")) return false;
  const size_t end = name.size() - 7, dot = name.rfind('.', end - 1);
  if (dot == std::string::npos) return false;
  const std::string kind = name.substr(dot + 1, end - dot - 1);
  const bool in_block =
      name.find(".attn.") != std::string::npos || name.find(".mlp.") != std::string::npos;
  return in_block && std::ranges::count(lora_target_kinds(), kind) == 1;
}

QloraBase quantize_base_nf4(ParameterSet& base, const ModelConfig& cfg, const TpGroup& tp,
                            Allocator& alloc) {
  PX_CHECK(cfg.lora.qlora && cfg.lora.enabled(), "quantize_base_nf4 needs --qlora with LoRA");
  PX_CHECK(base.frozen(), "the QLoRA base must be the frozen set");
  const bool dq = cfg.lora.double_quant;
  QloraBase out;
  for (int i = 0; i < base.size(); ++i) {
    const ParamSpec& s = base.spec(i);
    if (!is_block_linear_weight(s.name)) continue;
    const ParamRef r{i};
    const int64_t rows = s.shape[0], cols = s.shape[1];
    std::shared_ptr<const ops::Nf4Weight> q;
    if (!tp.active() || s.shard_dim < 0) {
      q = std::make_shared<ops::Nf4Weight>(alloc, base.value(r), rows, cols, dq);
    } else {
      // The full tensor's quantisation (what one process stores), then this
      // rank's rows (column-parallel) or columns (row-parallel) of it.
      const std::vector<float> full = gather_tp_parameter(base, i, base.value(r), tp);
      const int64_t frows = s.global_shape[0], fcols = s.global_shape[1];
      const ops::Nf4Weight whole(alloc, full.data(), frows, fcols, dq);
      const int64_t row0 = s.shard_dim == 0 ? s.shard_begin : 0;
      const int64_t col0 = s.shard_dim == 1 ? s.shard_begin : 0;
      PX_CHECK(ops::Nf4Weight::slice_aligned(whole, row0, rows, col0, cols),
               "--qlora under tp {}: '{}' ({} x {}) is split into {} x {} shards, which cut its "
               "NF4 blocks of {} (a row-parallel shard needs a multiple of {} columns, a "
               "column-parallel one a multiple of {} elements); choose a tp that keeps whole "
               "blocks",
               tp.size(), s.name, frows, fcols, rows, cols, ops::kNf4BlockSize, ops::kNf4BlockSize,
               ops::kNf4BlockSize);
      q = std::make_shared<ops::Nf4Weight>(
          ops::Nf4Weight::slice(alloc, whole, row0, rows, col0, cols));
    }
    out.weights += 1;
    out.numel += rows * cols;
    out.nf4_bytes += q->stored_bytes();
    base.set_nf4(i, std::move(q));
  }
  base.drop_nf4_values(alloc);
  return out;
}

}  // namespace parallm
