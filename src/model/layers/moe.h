// Mixture-of-experts feed-forward block (docs/moe.md), in place of the MLP
// in every layer_freq-th layer: a router (linear C -> E, no bias, replicated)
// picks each token's top-k experts (moe_router.h), assignments over
// capacity are dropped (the token keeps its other experts and the residual),
// the kept ones travel to their experts' owners (TokenDispatch over ep),
// run through the grouped experts (MoeExperts) and come back weighted by
// their gates: out_t = sum_j kept g_tj expert_{e_tj}(x_t). Backward sends the
// output gradients the same way, and adds the balancing losses' gradients
// (c.grad_scale) to the router's. Input and output: (N, C) rows made of
// whole sequences of c.T tokens (no tensor or sequence parallelism).
#pragma once
#include <string>
#include <vector>

#include "model/layers/moe_experts.h"
#include "model/layers/moe_router.h"
#include "parallel/expert/token_dispatch.h"

namespace parallm {

class Moe {
 public:
  struct Saved {
    Routing routing;
    TokenDispatch dispatch;
    std::vector<int64_t> send_row;  // (N*k): row of each assignment in send order; -1: dropped
    MoeExperts::Saved experts;
    Tensor y;  // (send rows, C): expert outputs back on this rank, in send order
  };
  Moe() = default;
  Moe(ParameterSet& ps, const std::string& prefix, const ModelConfig& cfg, double proj_std,
      const EpGroup& ep);
  // out (N, C) = moe(inp), overwritten.
  Saved forward(const LayerContext& c, float* out, const float* inp) const;
  // dinp (N, C) += d loss / d inp; router and expert gradients accumulate;
  // the routing statistics go to c.moe_stats.
  void backward(const LayerContext& c, float* dinp, const float* dout, const float* inp,
                const Saved& s) const;

 private:
  MoeConfig cfg_;
  int64_t C_ = 0;
  ParamRef router_;  // (E, C)
  MoeExperts experts_;
  EpGroup ep_;
};

}  // namespace parallm
