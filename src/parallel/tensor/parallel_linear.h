// Column- and row-parallel linear layers (Megatron), y = x W^T + b with W
// stored (out, in). Column-parallel splits W by output rows: each tp rank
// computes out/tp features from the full input (no communication inside).
// Row-parallel splits W by input columns: each rank multiplies its slice of
// the input and the partial products are summed by leaving the tp region
// (all-reduce, or reduce-scatter under sequence parallelism); its bias is
// replicated and added once, after the sum. Parameters keep the unsharded
// names and record their global shape and slice, so the counter-based init
// draws exactly the slice of the one-process tensor. add_lora gives a linear
// a LoRA adapter (lora_adapter.h); its base weights then live in a frozen
// set (no gradients: backward computes only the input gradient).
#pragma once
#include <string>

#include "nn/layer_context.h"
#include "nn/matmul_precision.h"
#include "nn/row_lora.h"
#include "parallel/tensor/lora_adapter.h"
#include "parallel/tensor/tp_group.h"

namespace parallm {

class ColumnParallelLinear {
 public:
  ColumnParallelLinear() = default;
  // out_features: the global width; must divide by tp / replicas. With
  // replicas > 1, each group of `replicas` consecutive tp ranks holds the
  // same slice (ParamSpec::tp_replicas).
  ColumnParallelLinear(ParameterSet& ps, const std::string& name, int64_t in, int64_t out_features,
                       bool bias, double init_std, const TpGroup& tp, int replicas = 1);
  // out (N, out/tp) = inp (N, in) W_r^T + b_r
  void forward(const LayerContext& c, float* out, const float* inp) const;
  // This layer's forward as one part of linear_forward_parts (several
  // column-parallel layers of the same input in one pass), writing to out.
  LinearPart part(const LayerContext& c, float* out) const;
  // dinp (N, in) += dout W_r (the caller sums dinp over tp); dW_r, db_r accumulate.
  void backward(const LayerContext& c, float* dinp, const float* dout, const float* inp) const;
  int64_t in() const { return in_; }
  int64_t out() const { return out_; }  // local width
  // A LoRA adapter on this linear (A replicated, B split like W), registered in adapters.
  void add_lora(ParameterSet& adapters, const std::string& name, const LoraConfig& cfg,
                const TpGroup& tp);
  // out += the adapter's term (nothing without one): after a part() pass.
  void adapt(const LayerContext& c, float* out, const float* inp) const {
    lora_.forward_add(c, out, inp);
    add_row_loras(c, site_, out, inp, in_, out_);
  }

 private:
  int64_t in_ = 0, out_ = 0, out_global_ = 0, begin_ = 0;
  int replicas_ = 1;
  ParamRef w_, b_;
  LoraAdapter lora_;
  uint64_t site_ = 0;  // lora_site of the name: served adapters' factors (nn/row_lora.h)
};

class RowParallelLinear {
 public:
  RowParallelLinear() = default;
  // in_features: the global width; must divide by tp.
  RowParallelLinear(ParameterSet& ps, const std::string& name, int64_t in_features, int64_t out,
                    bool bias, double init_std, const TpGroup& tp);
  // stream (rows, out) = sum over tp of inp_r (N, in/tp) W_r^T, + b; rows is
  // N, or N/tp under sequence parallelism. Uses an (N, out) workspace.
  void forward(const LayerContext& c, float* stream, const float* inp) const;
  // Given dstream (rows, out): dinp (N, in/tp) += dout W_r, dW_r and db accumulate.
  void backward(const LayerContext& c, float* dinp, const float* dstream, const float* inp) const;
  int64_t in() const { return in_; }  // local width
  int64_t out() const { return out_; }
  // A LoRA adapter (A split like W by input columns, B replicated), added
  // to the partial product before the tp sum.
  void add_lora(ParameterSet& adapters, const std::string& name, const LoraConfig& cfg);

 private:
  int64_t in_ = 0, out_ = 0;
  ParamRef w_, b_;
  TpGroup tp_;
  LoraAdapter lora_;
  uint64_t site_ = 0;  // lora_site of the name: served adapters' factors (nn/row_lora.h)
};

}  // namespace parallm
