// MoeExperts: this rank's experts of one MoE layer, each the family's MLP
// (GPT-2: fc -> GELU -> proj with biases; LLaMA: down(silu(gate) * up)) of
// moe.expert_intermediate(intermediate) features,
// stored stacked so every weight is one parameter (E_local, out, in) whose
// dimension 0 is the expert (ParamSpec::expert; split over ep). Rows come
// expert-major (TokenDispatch) and every linear runs as one grouped GEMM
// over all local experts (kernels/cpu/grouped_gemm.h). Under bf16/fp16
// (LayerContext::matmul) the GEMMs take 16-bit operands as the dense MLP's
// do: the weights' once-per-step copies, activations and gradients rounded
// at the GEMM, f32 outputs and accumulation; saved rows stay f32.
// Expert tp 1 (moe.h): not split over tp; under sequence parallelism each
// tp rank feeds its own tokens, so the gradients are partial over tp.
// Expert tp = tp (ep.split_over_tp): each expert's fc / gate / up keep
// I/tp of the features (column-parallel, ParamSpec::tp_dim 1) and proj /
// down the matching I/tp inputs (row-parallel, tp_dim 2); every tp rank is
// fed the same rows, so the gradients are whole and the outputs partial
// sums over tp (the caller reduces them); proj's bias is added by tp rank 0.
#pragma once
#include <string>
#include <vector>

#include "model/config.h"
#include "nn/layer_context.h"
#include "parallel/expert/ep_group.h"
#include "parallel/tensor/tp_group.h"

namespace parallm {

class MoeExperts {
 public:
  struct Saved {
    Tensor x;    // (M, C) the rows each expert received
    Tensor pre;  // (M, I) fc / gate output
    Tensor up;   // (M, I) SwiGLU only
    Tensor act;  // (M, I) input of the last linear
  };
  MoeExperts() = default;
  MoeExperts(ParameterSet& ps, const std::string& prefix, const ModelConfig& cfg, double proj_std,
             const EpGroup& ep, const TpGroup& tp = {});
  int64_t local_experts() const { return local_; }
  int64_t first_expert() const { return first_; }
  // out (M, C) = expert_e(x) for the rows [offsets[e], offsets[e+1]) of local expert e.
  Saved forward(const LayerContext& c, float* out, const float* x,
                const std::vector<int64_t>& offsets) const;
  // dx (M, C) += d/dx; weight gradients accumulate.
  void backward(const LayerContext& c, float* dx, const float* dout, const Saved& s,
                const std::vector<int64_t>& offsets) const;

 private:
  // The bf16/fp16 paths (c.matmul set); s's tensors already allocated.
  void forward_lowp(const LayerContext& c, float* out, const float* x,
                    const std::vector<int64_t>& offsets, Saved& s) const;
  void backward_lowp(const LayerContext& c, float* dx, const float* dout, const Saved& s,
                     const std::vector<int64_t>& offsets) const;

  bool swiglu_ = false;
  bool add_b2_ = true;                             // false on tp ranks > 0 under expert tp
  int64_t local_ = 0, first_ = 0, C_ = 0, I_ = 0;  // I_: this rank's features
  ParamRef w1_, b1_, w3_, w2_, b2_;  // fc|gate, its bias, up (SwiGLU), proj|down, its bias
};

}  // namespace parallm
