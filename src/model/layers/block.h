// One pre-norm transformer block: x + attn(norm1(x)), then + mlp(norm2(.)).
// The block's input is owned by the caller (it is the previous block's
// output); everything else the backward needs is in Saved. Under sequence
// parallelism the stream (inputs, outputs, norms, residual adds) holds only
// this rank's N/tp token rows; attention and MLP gather and scatter inside.
// Hidden dropout acts on the attention and MLP outputs before each residual
// add (on the stream rows, keyed by global rows; see dropout.h).
// Recomputation (c.recompute, docs/recompute.md): selective saves no norm
// outputs and no MLP activation and recomputes them in backward; full saves
// nothing and reruns the whole forward from the block's input in backward.
// Either way the backward sees bit-identical values.
// An MoE layer (cfg.moe.is_moe_layer) has a Moe block in place of the MLP;
// it saves its activations even under selective recomputation.
#pragma once
#include <string>

#include "model/layers/attention.h"
#include "model/layers/mlp.h"
#include "model/moe/moe.h"
#include "model/layers/norm.h"

namespace parallm {

class Block {
 public:
  struct Saved {  // empty members: recomputed in backward
    Norm::Saved norm1;
    Attention::Saved attn;
    Tensor mid;  // (rows, C): x + attn(norm1(x)), the input of norm2
    Norm::Saved norm2;
    Mlp::Saved mlp;
    Moe::Saved moe;  // MoE layers only
  };
  Block() = default;
  // adapters: LoRA adapters (cfg.lora) when ps is a frozen base; null: none.
  Block(ParameterSet& ps, int layer, const ModelConfig& cfg, const TpGroup& tp = {},
        const EpGroup& ep = {}, const CpGroup& cp = {}, ParameterSet* adapters = nullptr);
  bool is_moe() const { return is_moe_; }
  // out (rows, C) = block(inp); out may not alias inp.
  Saved forward(const LayerContext& c, float* out, const float* inp) const;
  // dinp (rows, C) += d loss / d inp, given dout = d loss / d out.
  void backward(const LayerContext& c, float* dinp, const float* dout, const float* inp,
                const Saved& s) const;
  // Inference through the KV cache (Attention::forward_cached): nothing is
  // saved; out (N, C) = block(inp), same kernels and order as forward.
  void forward_cached(const LayerContext& c, float* out, const float* inp, PagedKvCache& cache,
                      const std::vector<PagedSpan>& spans) const;

 private:
  // Forward and backward for a context already keyed by this layer.
  Saved run_forward(const LayerContext& c, float* out, const float* inp) const;
  void run_backward(const LayerContext& c, float* dinp, const float* dout, const float* inp,
                    const Saved& s) const;
  int64_t C_ = 0;
  int layer_ = 0;
  double hidden_dropout_ = 0.0;
  Norm norm1_, norm2_;
  Attention attn_;
  Mlp mlp_;
  bool is_moe_ = false;
  Moe moe_;
  TpGroup tp_;
};

}  // namespace parallm
