// moe_routing_rows.h: the routing row of a local row is b * T + the global
// position of its token; a cp rank's rows are (B, 2 chunks) in chunk order.
#include "model/moe/moe_routing_rows.h"

#include "base/error.h"
#include "ops/copy.h"
#include "parallel/context/cp_chunks.h"

namespace parallm {
namespace {

// Routing rows of cp rank q's (B, c.T) rows, in its local order.
std::vector<int64_t> cp_rank_rows(const LayerContext& c, const CpGroup& cp, int q) {
  const int64_t T = c.T * cp.size();
  std::vector<int64_t> pos;
  if (cp.active()) {
    pos = cp_chunks(T, cp.size(), cp.load_balance).positions_of(q);
  } else {
    pos.resize(static_cast<size_t>(T));
    for (int64_t t = 0; t < T; ++t) pos[t] = t;
  }
  std::vector<int64_t> rows(static_cast<size_t>(c.B * c.T));
  for (int64_t b = 0; b < c.B; ++b)
    for (int64_t t = 0; t < c.T; ++t) rows[b * c.T + t] = b * T + pos[t];
  return rows;
}

}  // namespace

MoeRoutingRows moe_routing_rows(const LayerContext& c, const TpGroup& tp, const CpGroup& cp) {
  MoeRoutingRows r;
  r.T = c.T * cp.size();
  r.N = c.B * r.T;
  const std::vector<int64_t> all = cp_rank_rows(c, cp, cp.rank());
  if (cp.active() && c.positions != nullptr)  // the model cut the batch the same way
    for (int64_t t = 0; t < c.T; ++t)
      PX_CHECK(all[t] == c.positions[t],
               "MoE under cp: local token {} is at global position {}, the cp chunk order "
               "says {}",
               t, c.positions[t], all[t]);
  const int64_t n = tp_local_rows(tp, c.N()), row0 = tp.sp() ? tp.rank() * n : 0;
  r.mine.assign(all.begin() + row0, all.begin() + row0 + n);
  r.share = all;
  return r;
}

void gather_routing_logits(const LayerContext& c, const MoeRoutingRows& rows, const TpGroup& tp,
                           const CpGroup& cp, const float* local, float* logits, int64_t E) {
  const int64_t n = static_cast<int64_t>(rows.mine.size()), share = c.N();  // share: cp rank's rows
  const ops::Stream& st = c.stream();
  const size_t row_bytes = static_cast<size_t>(E) * sizeof(float);
  if (!tp.sp() && !cp.active()) {  // one process's layout: rows in order
    ops::copy(st, logits, local, static_cast<size_t>(n) * row_bytes);
    return;
  }
  // [cp rank][its share's rows in local order][E]
  Tensor gathered = c.workspace({cp.size() * share, E});
  float* g = gathered.data<float>();
  float* my_share = g + cp.rank() * share * E;
  if (tp.sp())
    tp.comm->all_gather(local, my_share, static_cast<size_t>(n * E), DType::F32);
  else
    ops::copy(st, my_share, local, static_cast<size_t>(n) * row_bytes);
  if (cp.active()) cp.comm->all_gather(my_share, g, static_cast<size_t>(share * E), DType::F32);
  for (int q = 0; q < cp.size(); ++q) {
    const std::vector<int64_t> to = cp_rank_rows(c, cp, q);
    for (int64_t i = 0; i < share; ++i)
      ops::copy(st, logits + to[i] * E, g + (q * share + i) * E, row_bytes);
  }
}

}  // namespace parallm
