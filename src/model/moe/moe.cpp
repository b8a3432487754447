// MoE forward and backward (see moe.h). The send order is expert-major over
// global experts, tokens in (token, slot) order inside an expert, so the
// one-process run and every ep layout feed each expert in the same order
// per source rank. Routing covers the whole micro-batch in sequence order;
// this rank's input rows are the routing rows `rows.mine` (moe_routing_rows.h:
// a slice under sequence parallelism, two chunks per sequence under cp);
// the rows it feeds to the experts are those, or under expert tp the whole
// tp group's `rows.share`.
#include "model/moe/moe.h"

#include <algorithm>

#include "model/moe/moe_expert_bias.h"
#include "model/moe/moe_routing_rows.h"
#include "model/moe/moe_stats.h"
#include "nn/op_buffers.h"
#include "ops/matmul.h"
#include "ops/moe_rows.h"
#include "parallel/tensor/mappings.h"

namespace parallm {
namespace {

// The expert bias's loads (moe_expert_bias.h): assignments kept, per expert
// of layer c.layer, over the micro-batch. Every tp rank routes the whole
// micro-batch, as for the other statistics.
void add_layer_load(const LayerContext& c, const Routing& r) {
  const auto L = static_cast<size_t>(c.expert_bias->values().size() / r.E);
  std::vector<double>& load = c.moe_stats->layer_load;
  if (load.size() < L * r.E) load.resize(L * r.E, 0.0);
  double* mine = load.data() + c.layer * r.E;
  for (int64_t a = 0; a < r.N * r.k; ++a)
    if (r.kept[a]) mine[r.expert[a]] += 1.0;
}

// The dispatch's kept assignments per expert, for the planner's ep load
// (MoeStats::record_dispatch). Per micro-batch of this rank's routing, so
// one process and every layout with the same micro-batch size agree.
void record_dispatch_load(const LayerContext& c, const Routing& r) {
  std::vector<double> kept(static_cast<size_t>(r.E), 0.0);
  for (int64_t a = 0; a < r.N * r.k; ++a)
    if (r.kept[a]) kept[r.expert[a]] += 1.0;
  c.moe_stats->record_dispatch(kept);
}

// The row bookkeeping the gather and combine ops read, where they read it.
struct DeviceRows {
  DeviceRows(const LayerContext& c, const std::vector<int64_t>& fed_rows,
             const std::vector<int64_t>& send_rows)
      : fed(c.stream(), c.alloc, fed_rows), send_row(c.stream(), c.alloc, send_rows) {}
  OnDevice<int64_t> fed, send_row;
};

}  // namespace

Moe::Moe(ParameterSet& ps, const std::string& prefix, const ModelConfig& cfg, double proj_std,
         const EpGroup& ep, const TpGroup& tp, const CpGroup& cp)
    : cfg_(cfg.moe), C_(cfg.hidden), ep_(ep), tp_(tp), cp_(cp) {
  router_ = ps.add({.name = prefix + ".router.weight",
                    .shape = {cfg_.num_experts, C_},
                    .global_shape = {cfg_.num_experts, C_},
                    .init_std = cfg.init_std,
                    .weight_decay = false,
                    .tp_partial_grad = tp.sp()});
  experts_ = MoeExperts(ps, prefix, cfg, proj_std, ep, tp);
  has_shared_ = cfg_.shared_intermediate > 0;
  if (has_shared_) shared_ = MoeSharedExpert(ps, prefix, cfg, proj_std, tp);
}

Moe::Saved Moe::forward(const LayerContext& c, float* out, const float* inp) const {
  const int64_t E = cfg_.num_experts, k = cfg_.topk;
  Saved s;
  s.rows = moe_routing_rows(c, tp_, cp_);
  const std::vector<int64_t>& mine = s.rows.mine;  // routing row of each input row
  const auto rows = static_cast<int64_t>(mine.size());
  const int64_t N = s.rows.N;
  {
    Tensor local = c.workspace({rows, E});
    ops::linear_forward(c.stream(), local.data<float>(), inp, c.params.value(router_), nullptr,
                        rows, C_, E);
    // Every tp and cp rank routes the whole micro-batch, as one process does.
    Tensor logits = c.workspace({N, E});
    gather_routing_logits(c, s.rows, tp_, cp_, local.data<float>(), logits.data<float>(), E);
    const float* bias = c.expert_bias != nullptr && c.expert_bias->enabled()
                            ? c.expert_bias->layer(c.layer)
                            : nullptr;
    // Routing is host code: top-k, capacity and the statistics per sequence.
    const HostView<float> host_logits(c.stream(), logits.data<float>(), N * E);
    s.routing = route(cfg_, host_logits.get(), N, s.rows.T, bias);
  }
  const Routing& r = s.routing;
  // The rows this rank feeds to the experts: its own, or under expert tp
  // every row of the tp group's share (gathered under sp), whose outputs
  // are then partial sums over tp.
  const bool etp = expert_tp();
  const std::vector<int64_t>& fed = etp ? s.rows.share : mine;
  const auto nfed = static_cast<int64_t>(fed.size());
  const float* x = inp;
  Tensor x_all, out_all;
  if (etp && tp_.sp()) {  // without sp every tp rank already holds every row
    x_all = c.workspace({nfed, C_});
    enter_tp_region(tp_, x_all.data<float>(), inp, nfed, C_);
    x = x_all.data<float>();
  }
  if (etp) out_all = c.workspace({nfed, C_});
  float* o = etp ? out_all.data<float>() : out;
  // Send order: expert-major, then assignment order (fed ascends).
  std::vector<int64_t> per_expert(E, 0);
  for (int64_t i = 0; i < nfed; ++i)
    for (int64_t a = fed[i] * k; a < (fed[i] + 1) * k; ++a)
      if (r.kept[a]) ++per_expert[r.expert[a]];
  std::vector<int64_t> next(E + 1, 0);
  for (int64_t e = 0; e < E; ++e) next[e + 1] = next[e] + per_expert[e];
  const int64_t S = next[E];
  s.send_row.assign(N * k, -1);
  for (int64_t i = 0; i < nfed; ++i)
    for (int64_t a = fed[i] * k; a < (fed[i] + 1) * k; ++a)
      if (r.kept[a]) s.send_row[a] = next[r.expert[a]]++;
  const DeviceRows dev(c, fed, s.send_row);
  const ops::AssignedRows assigned{dev.fed.get(), nfed, k, dev.send_row.get()};
  Tensor send = c.workspace({std::max<int64_t>(S, 1), C_});
  ops::moe_gather(c.stream(), send.data<float>(), x, assigned, C_);
  s.dispatch = TokenDispatch(ep_, per_expert);
  const int64_t M = s.dispatch.recv_rows();
  Tensor xr = c.workspace({std::max<int64_t>(M, 1), C_});
  s.dispatch.dispatch(c.stream(), c.alloc, ep_, send.data<float>(), xr.data<float>(), C_);
  send = Tensor();
  Tensor yr = c.workspace({std::max<int64_t>(M, 1), C_});
  s.experts = experts_.forward(c, yr.data<float>(), xr.data<float>(), s.dispatch.expert_offsets());
  xr = Tensor();
  s.y = c.activation({std::max<int64_t>(S, 1), C_});
  s.dispatch.combine(c.stream(), c.alloc, ep_, yr.data<float>(), s.y.data<float>(), C_);
  const OnDevice<float> gate(c.stream(), c.alloc, r.gate);
  ops::moe_combine(c.stream(), o, s.y.data<float>(), gate.get(), assigned, C_);
  if (etp) leave_tp_region(tp_, out, out_all.data<float>(), nfed, C_);  // sum over tp
  if (has_shared_) s.shared = shared_.forward(c, out, inp);
  return s;
}

void Moe::backward(const LayerContext& c, float* dinp, const float* dout, const float* inp,
                   const Saved& s) const {
  const int64_t E = cfg_.num_experts, k = cfg_.topk;
  const std::vector<int64_t>& mine = s.rows.mine;
  const auto rows = static_cast<int64_t>(mine.size());
  const int64_t N = s.rows.N;
  const Routing& r = s.routing;
  const int64_t S = s.dispatch.send_rows(), M = s.dispatch.recv_rows();
  const bool etp = expert_tp();
  const std::vector<int64_t>& fed = etp ? s.rows.share : mine;
  const auto nfed = static_cast<int64_t>(fed.size());
  const float* d = dout;  // (nfed, C): the output gradient of the fed rows
  Tensor dout_all;
  if (etp) {
    dout_all = c.workspace({nfed, C_});
    leave_tp_region_backward(tp_, dout_all.data<float>(), dout, nfed, C_);
    d = dout_all.data<float>();
  }
  HostMirror<float> dgate(c.stream(), c.alloc, N * k);  // other tp / cp ranks' rows stay 0
  Tensor dy = c.workspace({std::max<int64_t>(S, 1), C_});
  const DeviceRows dev(c, fed, s.send_row);
  const ops::AssignedRows assigned{dev.fed.get(), nfed, k, dev.send_row.get()};
  const OnDevice<float> gate(c.stream(), c.alloc, r.gate);
  ops::moe_combine_backward(c.stream(), dy.data<float>(), dgate.op(), d, s.y.data<float>(),
                            gate.get(), assigned, C_);
  // Under expert tp y is this rank's partial sum: so is each dot product.
  if (etp)
    tp_.comm->all_reduce(dgate.op(), static_cast<size_t>(N * k), DType::F32, comm::ReduceOp::Sum);
  dgate.to_host(N * k);
  Tensor dyr = c.workspace({std::max<int64_t>(M, 1), C_});
  s.dispatch.dispatch(c.stream(), c.alloc, ep_, dy.data<float>(), dyr.data<float>(), C_);
  Tensor dxr = c.workspace({std::max<int64_t>(M, 1), C_});
  experts_.backward(c, dxr.data<float>(), dyr.data<float>(), s.experts,
                    s.dispatch.expert_offsets());
  dyr = Tensor();
  Tensor dx = dy;  // reuse: (S, C)
  s.dispatch.combine(c.stream(), c.alloc, ep_, dxr.data<float>(), dx.data<float>(), C_);
  Tensor dx_all;  // under expert tp: the fed rows' partial input gradients
  if (etp) dx_all = c.workspace({nfed, C_});
  float* dxa = etp ? dx_all.data<float>() : dinp;
  ops::moe_gather_backward(c.stream(), dxa, dx.data<float>(), assigned, C_);
  if (etp) enter_tp_region_backward(tp_, dinp, dx_all.data<float>(), nfed, C_);
  // The balancing losses' gradient reaches every row's logits; this rank
  // takes its own rows (the aux statistics are per whole sequence), so the
  // router's gradient sums to the whole one over tp (sp) and cp.
  std::vector<float> dlogits(static_cast<size_t>(N * E), 0.0f);  // host code, as routing
  route_backward(cfg_, r, dgate.host(), c.grad_scale, dlogits.data());
  std::vector<float> dmine(static_cast<size_t>(std::max<int64_t>(rows, 1) * E), 0.0f);
  for (int64_t i = 0; i < rows; ++i)
    std::copy_n(dlogits.data() + mine[i] * E, E, dmine.data() + i * E);
  const OnDevice<float> dmine_dev(c.stream(), c.alloc, dmine);
  ops::linear_backward(c.stream(), dinp, c.params.grad(router_), nullptr, dmine_dev.get(), inp,
                       c.params.value(router_), rows, C_, E);
  if (has_shared_) shared_.backward(c, dinp, dout, inp, s.shared);
  // Every cp rank routed the same whole sequences and the trainer sums the
  // statistics over dp x cp: cp rank 0 alone reports them (tp ranks are
  // outside that sum, so each reports its copy).
  if (c.moe_stats && cp_.rank() == 0) {
    c.moe_stats->add(r.stats);
    record_dispatch_load(c, r);
    if (c.expert_bias != nullptr && c.expert_bias->enabled()) add_layer_load(c, r);
  }
}

}  // namespace parallm
