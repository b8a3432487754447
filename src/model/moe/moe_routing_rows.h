// Which rows of the micro-batch's routing this rank's MoE input rows are
// (docs/moe.md, "Capacity and dropping"). Routing is always computed on the
// whole micro-batch, (B, T) in sequence order, so capacity per sequence and
// the balancing statistics are the one-process ones: under sequence
// parallelism a tp rank holds N/tp contiguous rows of its cp share, under
// context parallelism a cp rank holds two chunks of every sequence
// (cp_chunks.h). gather_routing_logits assembles every rank's logits in
// sequence order (all-gather over tp under sp, then over cp).
// Invariant: `mine` and `share` are strictly ascending, so this rank's
// assignments keep the one-process (token, slot) order.
#pragma once
#include <cstdint>
#include <vector>

#include "nn/layer_context.h"
#include "parallel/context/cp_group.h"
#include "parallel/tensor/tp_group.h"

namespace parallm {

struct MoeRoutingRows {
  int64_t N = 0;              // rows routed: the whole micro-batch, B x T
  int64_t T = 0;              // whole sequence length (c.T x cp)
  std::vector<int64_t> mine;  // (this rank's input rows): routing row of each
  // (c.N()): routing row of every row of this cp rank's share, all tp ranks'
  // stream rows together (expert tp feeds them all to every tp rank).
  std::vector<int64_t> share;
};

// c: the layer's context (c.T tokens per row on this rank, c.positions their
// global positions, checked against the cp chunk order).
MoeRoutingRows moe_routing_rows(const LayerContext& c, const TpGroup& tp, const CpGroup& cp);

// logits (rows.N, E) <- every rank's rows of local (rows.mine.size(), E), in
// routing order. Collective over tp (sp only) and cp; `logits` is a
// workspace of rows.N x E floats.
void gather_routing_logits(const LayerContext& c, const MoeRoutingRows& rows, const TpGroup& tp,
                           const CpGroup& cp, const float* local, float* logits, int64_t E);

}  // namespace parallm
