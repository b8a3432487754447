// MoE forward and backward (see moe.h). The send order is expert-major over
// global experts, tokens in (token, slot) order inside an expert, so the
// one-process run and every ep layout feed each expert in the same order
// per source rank. Under sequence parallelism this rank's rows are the
// micro-batch's rows [row0, row0 + rows); routing covers all N rows.
#include "model/layers/moe.h"

#include <cstring>

#include "kernels/cpu/activation.h"
#include "kernels/cpu/matmul.h"
#include "model/layers/moe_expert_bias.h"
#include "model/layers/moe_stats.h"

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

}  // namespace

Moe::Moe(ParameterSet& ps, const std::string& prefix, const ModelConfig& cfg, double proj_std,
         const EpGroup& ep, const TpGroup& tp)
    : cfg_(cfg.moe), C_(cfg.hidden), ep_(ep), tp_(tp) {
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
  const int64_t N = c.N(), E = cfg_.num_experts, k = cfg_.topk;
  const int64_t rows = tp_local_rows(tp_, N), row0 = tp_.sp() ? tp_.rank() * rows : 0;
  // This rank's assignments: [a0, a1) of the micro-batch's N*k.
  const int64_t a0 = row0 * k, a1 = (row0 + rows) * k;
  Saved s;
  {
    Tensor logits = c.workspace({N, E});
    float* mine = logits.data<float>() + row0 * E;
    cpu::linear_forward<float>(mine, inp, c.params.value(router_), nullptr, rows, C_, E);
    if (tp_.sp())  // every tp rank routes the whole micro-batch, as one process does
      tp_.comm->all_gather(mine, logits.data<float>(), static_cast<size_t>(rows * E), DType::F32);
    const float* bias = c.expert_bias != nullptr && c.expert_bias->enabled()
                            ? c.expert_bias->layer(c.layer)
                            : nullptr;
    s.routing = route(cfg_, logits.data<float>(), N, c.T, bias);
  }
  const Routing& r = s.routing;
  // Send order: expert-major, then assignment order.
  std::vector<int64_t> per_expert(E, 0);
  for (int64_t a = a0; a < a1; ++a)
    if (r.kept[a]) ++per_expert[r.expert[a]];
  std::vector<int64_t> next(E + 1, 0);
  for (int64_t e = 0; e < E; ++e) next[e + 1] = next[e] + per_expert[e];
  const int64_t S = next[E];
  s.send_row.assign(N * k, -1);
  for (int64_t a = a0; a < a1; ++a)
    if (r.kept[a]) s.send_row[a] = next[r.expert[a]]++;
  Tensor send = c.workspace({std::max<int64_t>(S, 1), C_});
  for (int64_t a = a0; a < a1; ++a)
    if (s.send_row[a] >= 0)
      std::memcpy(send.data<float>() + s.send_row[a] * C_, inp + (a / k - row0) * C_,
                  static_cast<size_t>(C_) * sizeof(float));
  s.dispatch = TokenDispatch(ep_, per_expert);
  const int64_t M = s.dispatch.recv_rows();
  Tensor xr = c.workspace({std::max<int64_t>(M, 1), C_});
  s.dispatch.dispatch(ep_, send.data<float>(), xr.data<float>(), C_);
  send = Tensor();
  Tensor yr = c.workspace({std::max<int64_t>(M, 1), C_});
  s.experts = experts_.forward(c, yr.data<float>(), xr.data<float>(), s.dispatch.expert_offsets());
  xr = Tensor();
  s.y = c.activation({std::max<int64_t>(S, 1), C_});
  s.dispatch.combine(ep_, yr.data<float>(), s.y.data<float>(), C_);
  std::memset(out, 0, static_cast<size_t>(rows * C_) * sizeof(float));
  for (int64_t a = a0; a < a1; ++a)
    if (s.send_row[a] >= 0)
      cpu::axpy(out + (a / k - row0) * C_, r.gate[a], s.y.data<float>() + s.send_row[a] * C_, C_);
  if (has_shared_) s.shared = shared_.forward(c, out, inp);
  return s;
}

void Moe::backward(const LayerContext& c, float* dinp, const float* dout, const float* inp,
                   const Saved& s) const {
  const int64_t N = c.N(), E = cfg_.num_experts, k = cfg_.topk;
  const int64_t rows = tp_local_rows(tp_, N), row0 = tp_.sp() ? tp_.rank() * rows : 0;
  const int64_t a0 = row0 * k, a1 = (row0 + rows) * k;
  const Routing& r = s.routing;
  const int64_t S = s.dispatch.send_rows(), M = s.dispatch.recv_rows();
  std::vector<float> dgate(N * k, 0.0f);  // other tp ranks' rows stay 0
  Tensor dy = c.workspace({std::max<int64_t>(S, 1), C_});
  for (int64_t a = a0; a < a1; ++a) {
    if (s.send_row[a] < 0) continue;
    const float* d = dout + (a / k - row0) * C_;
    const float* y = s.y.data<float>() + s.send_row[a] * C_;
    double dot = 0.0;
    for (int64_t i = 0; i < C_; ++i) dot += static_cast<double>(d[i]) * y[i];
    dgate[a] = static_cast<float>(dot);
    cpu::axpy(dy.data<float>() + s.send_row[a] * C_, r.gate[a], d, C_);
  }
  Tensor dyr = c.workspace({std::max<int64_t>(M, 1), C_});
  s.dispatch.dispatch(ep_, dy.data<float>(), dyr.data<float>(), C_);
  Tensor dxr = c.workspace({std::max<int64_t>(M, 1), C_});
  experts_.backward(c, dxr.data<float>(), dyr.data<float>(), s.experts,
                    s.dispatch.expert_offsets());
  dyr = Tensor();
  Tensor dx = dy;  // reuse: (S, C)
  s.dispatch.combine(ep_, dxr.data<float>(), dx.data<float>(), C_);
  for (int64_t a = a0; a < a1; ++a)
    if (s.send_row[a] >= 0)
      cpu::add_inplace(dinp + (a / k - row0) * C_, dx.data<float>() + s.send_row[a] * C_, C_);
  // The balancing losses' gradient reaches every row's logits; this rank
  // takes its own rows (the aux statistics are per whole sequence).
  Tensor dlogits = c.workspace({N, E});
  route_backward(cfg_, r, dgate.data(), c.grad_scale, dlogits.data<float>());
  cpu::linear_backward<float>(dinp, c.params.grad(router_), nullptr,
                              dlogits.data<float>() + row0 * E, inp, c.params.value(router_), rows,
                              C_, E);
  if (has_shared_) shared_.backward(c, dinp, dout, inp, s.shared);
  if (c.moe_stats) {
    c.moe_stats->add(r.stats);
    record_dispatch_load(c, r);
    if (c.expert_bias != nullptr && c.expert_bias->enabled()) add_layer_load(c, r);
  }
}

}  // namespace parallm
