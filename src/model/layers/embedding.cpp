#include "model/layers/embedding.h"

#include <algorithm>
#include <cmath>

#include "nn/op_buffers.h"
#include "ops/embedding.h"
#include "ops/optimizer.h"
#include "parallel/tensor/mappings.h"

namespace parallm {

Embedding::Embedding(ParameterSet& ps, const ModelConfig& cfg, const TpGroup& tp)
    : C_(cfg.hidden),
      P_(cfg.max_positions),
      scale_(cfg.scales_embeddings() ? static_cast<float>(std::sqrt(static_cast<double>(C_)))
                                     : 1.0f),
      shard_(VocabShard::of(cfg.vocab_size, tp.size(), tp.rank())),
      tp_(tp) {
  wte_ = ps.add({.name = "embed.weight",
                 .shape = {shard_.rows, C_},
                 .global_shape = {shard_.padded, C_},
                 .shard_dim = tp.active() ? 0 : -1,
                 .shard_begin = shard_.begin,
                 .init_std = cfg.init_std});
  if (cfg.uses_learned_positions())
    wpe_ = ps.add({.name = "pos_embed.weight",
                   .shape = {P_, C_},
                   .init_std = cfg.init_std / 2,
                   .tp_partial_grad = tp.sp()});
}

// Positions of the stream's rows: row i is token row first + i of (B, T).
std::vector<int32_t> Embedding::stream_positions(const LayerContext& c, int64_t rows) const {
  const int64_t first = rows == c.N() ? 0 : tp_.rank() * rows;
  std::vector<int32_t> pos(static_cast<size_t>(rows));
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t p = c.position_ids ? c.position_ids[first + i] : c.positions[(first + i) % c.T];
    PX_CHECK(p < P_, "position {} is beyond max_positions ({})", p, P_);
    pos[static_cast<size_t>(i)] = static_cast<int32_t>(p);
  }
  return pos;
}

void Embedding::forward(const LayerContext& c, float* out, const int32_t* host_tokens) const {
  const float* wte = c.params.value(wte_);
  const int64_t rows = tp_local_rows(tp_, c.N());
  const OnDevice<int32_t> tok(c.stream(), c.alloc, host_tokens, c.N());
  const int32_t* tokens = tok.get();
  if (!tp_.active()) {
    ops::embedding_forward(c.stream(), out, tokens, wte, c.N(), C_, 0, shard_.rows, false);
  } else {
    Tensor partial = c.workspace({c.N(), C_});
    ops::embedding_forward(c.stream(), partial.data<float>(), tokens, wte, c.N(), C_, shard_.begin,
                           shard_.rows, false);
    leave_tp_region(tp_, out, partial.data<float>(), c.N(), C_);
  }
  if (scale_ != 1.0f) ops::scale_inplace(c.stream(), out, rows * C_, scale_);
  if (wpe_.index >= 0) {
    const std::vector<int32_t> host_pos = stream_positions(c, rows);
    const OnDevice<int32_t> pos(c.stream(), c.alloc, host_pos);
    ops::embedding_forward(c.stream(), out, pos.get(), c.params.value(wpe_), rows, C_, 0, P_, true);
  }
}

void Embedding::backward(const LayerContext& c, const float* dout,
                         const int32_t* host_tokens) const {
  if (c.params.frozen()) return;  // a frozen base (LoRA): the tables take no gradient
  const int64_t rows = tp_local_rows(tp_, c.N());
  const float* dfull = dout;
  Tensor gathered;
  if (tp_.sp()) {
    gathered = c.workspace({c.N(), C_});
    leave_tp_region_backward(tp_, gathered.data<float>(), dout, c.N(), C_);
    dfull = gathered.data<float>();
  }
  Tensor scaled;  // d table = scale * dout (dout itself is the caller's)
  if (scale_ != 1.0f) {
    scaled = c.workspace({c.N(), C_});
    float* d = scaled.data<float>();
    ops::copy(c.stream(), d, dfull, static_cast<size_t>(c.N() * C_) * sizeof(float));
    ops::scale_inplace(c.stream(), d, c.N() * C_, scale_);
    dfull = d;
  }
  const OnDevice<int32_t> tok(c.stream(), c.alloc, host_tokens, c.N());
  ops::embedding_backward(c.stream(), c.params.grad(wte_), tok.get(), dfull, c.N(), C_,
                          shard_.begin, shard_.rows);
  if (wpe_.index >= 0) {
    const std::vector<int32_t> host_pos = stream_positions(c, rows);
    const OnDevice<int32_t> pos(c.stream(), c.alloc, host_pos);
    ops::embedding_backward(c.stream(), c.params.grad(wpe_), pos.get(), dout, rows, C_, 0, P_);
  }
}

}  // namespace parallm
