// What `parallm calibrate` measured of this machine's kernels at one thread
// count: the linear layer's forward and backward time on a grid of shapes
// (rows x in x out), the attention kernel's time per unit of work, the
// element-wise kernels' time per element, the optimizer's per parameter and
// memcpy's bandwidth. The step-time model (plan/step_time.h) reads a
// shape's rate by interpolating the grid (trilinear in log2 of each side,
// on FLOP/s; clamped at the edges), so a layout's narrower tp matrices or
// shorter cp chunks cost what this machine's kernels cost at that shape.
#pragma once
#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace parallm {

enum class Pass { Forward, Backward };

// Kinds of element-wise work the model counts, a time per element and pass:
//   "rmsnorm", "layernorm", "swiglu", "gelu", "rope" (per rotated element),
//   "add" (residual), "cross_entropy" (per logit), "embedding" (per output
//   element), "moe_rows" (an MoE layer's row moves around its experts, per
//   assigned element: send rows x hidden).
struct OpCosts {
  int threads = 1;
  std::vector<int64_t> rows, ins, outs;  // the grid's sides, ascending
  // seconds of one linear_forward / linear_backward (dinp + dweight) at
  // rows[i] x ins[j] x outs[k], index (i * ins.size() + j) * outs.size() + k.
  std::vector<double> fwd_s, bwd_s;
  // What calibration timed, when fwd_s and bwd_s hold a fit of it
  // (plan/linear_fit.h); empty otherwise. Kept for the record, not read.
  std::vector<double> fwd_s_measured, bwd_s_measured;
  // Attention, seconds per unit = batch x query heads x visible (query, key)
  // pairs x head dim, forward and backward, at the measured sequence lengths
  // (at head dim attn_head_dim).
  std::vector<int64_t> attn_seq;
  std::vector<double> attn_fwd_s, attn_bwd_s;
  // The same per-unit times at one length (attn_dim_seq) and several head
  // dims: a narrow head does less work per score (32: about 1.2x the
  // forward time per unit of 64 on AVX2), and scales the sequence sweep by
  // its ratio to attn_head_dim's. Empty (older profiles): the head dim does
  // not matter.
  int64_t attn_head_dim = 64, attn_dim_seq = 512;
  std::vector<int64_t> attn_dims;
  std::vector<double> attn_dim_fwd_s, attn_dim_bwd_s;
  std::map<std::string, double> elem_fwd_s, elem_bwd_s;  // seconds per element
  double optimizer_s_per_param = 0;                      // AdamW, fp32 master
  double copy_bytes_per_s = 0;                           // memcpy (large buffers)

  // Seconds of one linear (rows x in -> out): forward, and backward (dinp
  // and dweight).
  double linear_fwd_s(int64_t rows, int64_t in, int64_t out) const;
  double linear_bwd_s(int64_t rows, int64_t in, int64_t out) const;
  // Seconds of attention over `units` (see above) at sequence length t and
  // head dim `head_dim`.
  double attention_s(Pass p, double units, int64_t t, int64_t head_dim) const;
  // Seconds of n elements of `kind`; an unknown kind is an error naming the
  // known ones.
  double elementwise_s(Pass p, const std::string& kind, double n) const;

  void validate(const std::string& where) const;  // sizes agree, times positive
};

nlohmann::json op_costs_to_json(const OpCosts& c);
OpCosts op_costs_from_json(const nlohmann::json& j, const std::string& where);

}  // namespace parallm
