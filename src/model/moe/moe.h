// Mixture-of-experts feed-forward block (docs/moe.md), in place of the MLP
// in every layer_freq-th layer: a router (linear C -> E, no bias, replicated)
// picks each token's top-k experts (moe_router.h), assignments over
// capacity are dropped (the token keeps its other experts and the residual),
// the kept ones travel to their experts' owners (TokenDispatch over ep),
// run through the grouped experts (MoeExperts) and come back weighted by
// their gates: out_t = sum_j kept g_tj expert_{e_tj}(x_t). Backward sends the
// output gradients the same way, and adds the balancing losses' gradients
// (c.grad_scale) to the router's. Input and output: the residual stream's
// rows, (N, C) of whole sequences of c.T tokens, or under sequence
// parallelism this tp rank's N/tp contiguous rows of them.
// Tensor parallelism (docs/moe.md, Megatron-core's parallel folding with
// expert tp 1): experts are not tp-split; each tp rank runs its ep rank's
// experts whole on its own rows. The router's logits are all-gathered over
// tp under sp, so every tp rank routes the whole micro-batch exactly as one
// process does (capacity per sequence is unchanged) and keeps its rows'
// assignments; router and expert gradients are then partial over tp
// (ParamSpec::tp_partial_grad) and summed by the model. Without sp every tp
// rank holds every row and computes the same thing.
// Context parallelism (docs/moe.md): a cp rank holds two chunks of every
// sequence; the logits are all-gathered over cp too and put in sequence
// order, so every cp rank routes every sequence whole, identically, and
// keeps its own tokens' assignments; cp rank 0 alone reports the statistics.
// Expert tensor parallelism (ep.split_over_tp, --expert-tp = tp): each
// expert is split over tp (moe_experts.h); every tp rank feeds every row of
// the tp group (gathered under sp), the expert outputs are partial sums over
// tp (reduce-scattered / all-reduced back, as a dense MLP's) and so are the
// gate gradients (all-reduced over tp).
// A shared expert (moe_shared_expert.h), when configured, adds its output
// for every token after the routed experts'.
#pragma once
#include <string>
#include <vector>

#include "model/moe/moe_experts.h"
#include "model/moe/moe_router.h"
#include "model/moe/moe_routing_rows.h"
#include "model/moe/moe_shared_expert.h"
#include "parallel/expert/token_dispatch.h"
#include "parallel/tensor/tp_group.h"

namespace parallm {

class Moe {
 public:
  struct Saved {
    MoeRoutingRows rows;  // this rank's rows in the whole micro-batch's routing
    Routing routing;
    TokenDispatch dispatch;
    // (N*k) over the whole micro-batch: send row of each of this rank's
    // assignments; -1: dropped, or another tp / cp rank's row.
    std::vector<int64_t> send_row;
    MoeExperts::Saved experts;
    Tensor y;  // (send rows, C): expert outputs back on this rank, in send order
    MoeSharedExpert::Saved shared;  // with a shared expert only
  };
  Moe() = default;
  Moe(ParameterSet& ps, const std::string& prefix, const ModelConfig& cfg, double proj_std,
      const EpGroup& ep, const TpGroup& tp = {}, const CpGroup& cp = {});
  // out (rows, C) = moe(inp), overwritten (rows: c.N(), or c.N()/tp under sp).
  Saved forward(const LayerContext& c, float* out, const float* inp) const;
  // dinp (rows, C) += d loss / d inp; router and expert gradients accumulate;
  // the routing statistics go to c.moe_stats.
  void backward(const LayerContext& c, float* dinp, const float* dout, const float* inp,
                const Saved& s) const;

 private:
  MoeConfig cfg_;
  int64_t C_ = 0;
  ParamRef router_;  // (E, C)
  MoeExperts experts_;
  bool has_shared_ = false;
  MoeSharedExpert shared_;
  // Experts split over tp (--expert-tp = tp): every tp rank feeds every row.
  bool expert_tp() const { return ep_.split_over_tp && tp_.active(); }

  EpGroup ep_;
  TpGroup tp_;
  CpGroup cp_;
};

}  // namespace parallm
