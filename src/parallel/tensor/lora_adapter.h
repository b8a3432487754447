// LoraAdapter: the low-rank term of one linear (docs/lora.md),
// out += scale * dropout(x) A^T B^T with A (rank, in) and B (out, rank) held
// in the adapter ParameterSet (LayerContext::adapters), the base frozen.
// Split over tp so the linear keeps its one collective: on a column-parallel
// linear A is replicated and B split by output rows like W; on a row-parallel
// one A is split by input columns like W and B replicated, and the term is
// added to the partial sum before the tp reduction. The replicated factor's
// gradient is a partial sum on each rank (ParamSpec::tp_grad_sum). Nothing is
// saved between forward and backward: backward recomputes x A^T (r is small).
#pragma once
#include <string>

#include "nn/layer_context.h"
#include "nn/lora_config.h"
#include "parallel/tensor/tp_group.h"

namespace parallm {

class LoraAdapter {
 public:
  LoraAdapter() = default;  // inactive: forward_add and backward do nothing
  // Column-parallel: this rank's output rows [out_begin, out_begin + out_local)
  // of out_global; replicas as ColumnParallelLinear.
  static LoraAdapter column(ParameterSet& adapters, const std::string& name, int64_t in,
                            int64_t out_global, int64_t out_local, int64_t out_begin, int replicas,
                            const LoraConfig& cfg, const TpGroup& tp);
  // Row-parallel: this rank's input columns [in_begin, in_begin + in_local) of in_global.
  static LoraAdapter row(ParameterSet& adapters, const std::string& name, int64_t in_global,
                         int64_t in_local, int64_t in_begin, int64_t out, const LoraConfig& cfg,
                         const TpGroup& tp);
  bool active() const { return a_.index >= 0; }
  // out (N, out) += scale * dropout(x) A^T B^T; x (N, in), this rank's widths.
  void forward_add(const LayerContext& c, float* out, const float* x) const;
  // dA, dB accumulate; dx (N, in) += the term's input gradient (null: skipped).
  void backward(const LayerContext& c, float* dx, const float* dout, const float* x) const;

 private:
  // x with the adapter's dropout applied (x itself when none), and the mask on g.
  const float* dropped(const LayerContext& c, const float* x, Tensor& buf) const;
  void apply_mask(const LayerContext& c, float* g) const;
  Tensor scaled_h(const LayerContext& c, const float* xd) const;  // (N, r) scale * xd A^T
  ParamRef a_, b_;
  int64_t in_ = 0, out_ = 0, rank_ = 0, in_begin_ = 0;
  double scale_ = 0.0, dropout_ = 0.0;
  uint64_t site_ = 0;  // dropout stream of this linear
};

}  // namespace parallm
