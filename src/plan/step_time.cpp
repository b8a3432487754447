#include "plan/step_time.h"

#include <algorithm>
#include <cmath>

#include "plan/arrival_wait.h"
#include "plan/flops.h"
#include "plan/processor_sharing.h"
#include "plan/stage_work.h"

namespace parallm {

namespace {

// Gradients are reduced in buckets (DDP's --bucket-mb, ZeRO's reduce-scatter
// likewise): whole buckets, then the rest; each is one all-reduce (ring or
// tree, the cheaper) whose messages the link prices by their size.
double bucketed_all_reduce_s(double bytes, double bucket_bytes, int n, const LinkCost& link) {
  if (n <= 1 || bytes <= 0) return 0.0;
  if (bucket_bytes <= 0 || bucket_bytes >= bytes) return link.all_reduce_s(bytes, n);
  const double whole = std::floor(bytes / bucket_bytes);
  return whole * link.all_reduce_s(bucket_bytes, n) +
         link.all_reduce_s(bytes - whole * bucket_bytes, n);
}

// The measured costs for the thread count a rank gets: the most threads not
// above it (the fewest measured when every entry has more).
const OpCosts& costs_for_threads(const std::vector<OpCosts>& ops, int threads) {
  const OpCosts* best = &ops.front();
  for (const OpCosts& o : ops) {
    const bool fits = o.threads <= threads;
    if ((fits && (best->threads > threads || o.threads > best->threads)) ||
        (!fits && best->threads > threads && o.threads < best->threads))
      best = &o;
  }
  return *best;
}

int64_t moe_layer_count(const ModelConfig& m) {
  int64_t n = 0;
  for (int64_t l = 0; l < m.n_layers; ++l) n += m.moe.is_moe_layer(l) ? 1 : 0;
  return n;
}

// The inputs every term reads, built once per query (make_step_context);
// the compute term fills in the end stage's pass shares, and the sync term
// the collectives' counts and the work between them, for the terms after.
// The terms stay in this file, each called once, so the compiler inlines
// them into predict_step_time and fuses the same multiply-adds as it did
// in the single function: moved to another file they would change the last
// bit of some times.
struct StepContext {
  const MemoryQuery& q;
  const DeviceProfile& d;
  const ModelConfig& m;
  // q with every ep rank evenly loaded. Built for every query and held to
  // the end of predict_step_time, as the monolithic version held it: the
  // compiler fuses multiply-adds (-ffp-contract=fast) only where no call
  // that may throw into a cleanup splits them, so its lifetime decides
  // the last bit of the dp terms.
  MemoryQuery even;
  int devices = 0;
  double micro = 0, tokens = 0, hw_flops_dev = 0, model_per_token = 0;
  double width = 0, layers_here = 0, moe_layers = 0;
  const OpCosts* costs = nullptr;  // null: the analytic GPU model
  double shared = 1.0;
  int on_node = 0;
  double elem_bytes = 0, act_bytes = 0, per_layer = 0;
  // Set by the compute term: the attention core's time per micro-batch
  // (calibrated), and the end stage's pass shares (a third each without
  // calibration, as Qi et al. assume).
  double attn_micro_s = 0;
  double f_share = 1.0 / 3, b_share = 1.0 / 3, w_share = 1.0 / 3;
  // Set by the sync term.
  double tp_syncs = 0, ep_syncs = 0, work_s = 0;
  bool waits_priced = false;
};

StepContext make_step_context(const MemoryQuery& q, const DeviceProfile& d) {
  StepContext c{.q = q, .d = d, .m = q.model, .even = q};
  const ModelConfig& m = q.model;
  c.devices = q.tp * q.pp * q.dp * q.cp;
  c.micro = static_cast<double>(q.micro_batches);
  c.tokens = static_cast<double>(q.micro_batch) * c.micro * q.dp * q.seq_len;
  const double hw_per_token = hardware_flops_per_token(m, q.seq_len, q.recompute);
  c.model_per_token = training_flops_per_token(m, q.seq_len);
  c.hw_flops_dev = hw_per_token * c.tokens / c.devices;

  c.width = static_cast<double>(m.hidden) / q.tp;
  c.layers_here = static_cast<double>(m.n_layers) / q.pp;
  c.moe_layers = static_cast<double>(moe_layer_count(m));  // 0 without MoE
  // A calibrated machine whose ranks share cores: each rank runs its
  // kernels on cores / ranks threads (at least 1); with more ranks than
  // cores they time-share them (below, after the critical path).
  c.on_node = std::min(c.devices, d.devices_per_node);
  if (!d.ops.empty()) {
    c.costs = &costs_for_threads(d.ops, std::max(1, d.cores / c.on_node));
    c.shared = std::max(1.0, static_cast<double>(c.on_node) * c.costs->threads / d.cores);
  }
  // Under ep the group waits at every dispatch for its busiest rank: that
  // rank's extra expert work is ep_imbalance_s, the even share compute_s.
  c.even.ep_max_load.clear();
  // The micro-batch's activations, which the tp collectives reduce and the
  // pipeline sends; a layer's tp collectives (4, 6 under full recompute)
  // also count its blocking waits.
  c.elem_bytes = q.precision == Precision::FP32 ? 4.0 : 2.0;
  c.act_bytes = static_cast<double>(q.micro_batch) * q.seq_len / q.cp * m.hidden * c.elem_bytes;
  c.per_layer = q.recompute == Recompute::Full ? 6.0 : 4.0;
  return c;
}

// A calibrated machine: compute, element-wise and ep imbalance from the
// end stages' ops at this machine's measured rates.
void price_compute_calibrated(StepContext& c, StepTime& r) {
  const MemoryQuery& q = c.q;
  const double micro = c.micro;
  // The heavier end stage, each op at this machine's measured rate for its shape.
  const auto heaviest = [&](const MemoryQuery& query) {
    StageSeconds worst;
    for (const StageWork& w : end_stage_works(query)) {
      const StageSeconds p = price_stage(w, *c.costs);
      if (p.matmul_s + p.elementwise_s > worst.matmul_s + worst.elementwise_s) {
        worst = p;
        c.attn_micro_s =
            c.costs->attention_s(Pass::Forward, w.attn_units, w.attn_seq, w.attn_head_dim) +
            c.costs->attention_s(Pass::Backward, w.attn_units, w.attn_seq, w.attn_head_dim);
      }
    }
    return worst;
  };
  const StageSeconds busiest = heaviest(q), mean = heaviest(c.even);
  // The heavier end stage's shares of F, B and W (zero-bubble passes,
  // stage_work.h); without calibration a third each, as Qi et al. assume.
  const double passes = busiest.forward_s + busiest.backward_s + busiest.weight_s;
  if (passes > 0) {
    c.f_share = busiest.forward_s / passes;
    c.b_share = busiest.backward_s / passes;
    c.w_share = busiest.weight_s / passes;
  }
  r.compute_s = mean.matmul_s * micro;
  r.elementwise_s = mean.elementwise_s * micro;
  if (q.ep_load_factor() > 1.0)
    r.ep_imbalance_s = std::max(0.0, (busiest.matmul_s - mean.matmul_s) +
                                         (busiest.elementwise_s - mean.elementwise_s)) *
                       micro;
}

// The analytic GPU model: compute, element-wise and ep imbalance from FLOPs
// and bytes over the profile's rates.
void price_compute_analytic(const StepContext& c, StepTime& r) {
  const MemoryQuery& q = c.q;
  const ModelConfig& m = c.m;
  const DeviceProfile& d = c.d;
  const double micro = c.micro;
  // Compute at the GEMM rate of the narrowest split matrix side.
  r.compute_s = c.hw_flops_dev / d.gemm_flops(c.width);
  // Element-wise work: every activation byte a layer saves is written once
  // and read once, in forward, backward and (recompute) forward again.
  MemoryQuery plain = q;
  plain.recompute = Recompute::None;
  plain.activation_model = ActivationModel::Megatron16;
  const double act_layer = estimate_memory(plain).activation_per_layer;  // one micro-batch
  const double passes = q.recompute == Recompute::None ? 2.0 : 3.0;
  r.elementwise_s = 2.0 * act_layer * passes * c.layers_here * micro / d.memory_bytes_per_s;
  // Under ep the group waits at every dispatch for its busiest rank.
  if (q.ep_load_factor() > 1.0) {  // the busiest rank's extra expert matmuls
    const double mats = m.uses_swiglu() ? 3.0 : 2.0;
    const double F = static_cast<double>(m.moe.expert_intermediate(m.intermediate));
    const double per_token = 6.0 * m.moe.topk * mats * m.hidden * F;  // forward + backward
    // Experts are not tp-split: a tp rank runs its sp share of the rows, or all of them.
    const double sp_share = q.sequence_parallel && q.tp > 1 ? 1.0 / q.tp : 1.0;
    const double expert_flops =
        per_token * c.moe_layers / q.pp * c.tokens / (q.dp * q.cp) * sp_share;
    r.ep_imbalance_s = (q.ep_load_factor() - 1.0) * expert_flops / d.gemm_flops(F);
  }
}

// Tensor-parallel collectives on the micro-batch's activations.
void price_tp_comm(const StepContext& c, StepTime& r) {
  const MemoryQuery& q = c.q;
  const DeviceProfile& d = c.d;
  const LinkCost& tp_link = q.tp <= d.devices_per_node ? d.intra_node : d.inter_node;
  // Sequence parallelism's reduce-scatter + all-gather are ring-only.
  const double tp_collective = q.sequence_parallel ? tp_link.ring_all_reduce_s(c.act_bytes, q.tp)
                                                   : tp_link.all_reduce_s(c.act_bytes, q.tp);
  r.tp_comm_s = c.per_layer * c.layers_here * c.micro * tp_collective;
}

// Context parallel (ring): per layer and micro-batch the keys and values
// go around the ring once forward, keys, values and their gradients once
// backward (and forward again under full recompute): (cp-1) steps of this
// rank's K and V chunk. The runtime overlaps them with attention; what
// attention's own time does not cover is exposed.
void price_cp_comm(const StepContext& c, StepTime& r) {
  const MemoryQuery& q = c.q;
  const ModelConfig& m = c.m;
  const DeviceProfile& d = c.d;
  if (q.cp <= 1) return;
  const double kv_chunk = 2.0 * q.micro_batch * (static_cast<double>(q.seq_len) / q.cp) *
                          m.head_dim * std::max<int64_t>(1, m.n_kv_heads / q.tp) * c.elem_bytes;
  const LinkCost& cp_link = q.tp * q.cp <= d.devices_per_node ? d.intra_node : d.inter_node;
  const double rounds = q.recompute == Recompute::Full ? 4.0 : 3.0;  // fwd, bwd x2 (+fwd)
  const double step = cp_link.message_s(kv_chunk);
  const double comm = rounds * (q.cp - 1) * step * c.layers_here * c.micro;
  const double attn_flops = 4.0 * m.n_layers * m.n_heads * m.head_dim *
                            static_cast<double>(q.seq_len) * c.tokens / c.devices;  // 12LHQT share
  const double attn_s =
      c.costs != nullptr ? c.attn_micro_s * c.micro : 3.0 * attn_flops / d.gemm_flops(c.width);
  r.cp_comm_s = std::max(0.0, comm - attn_s);
}

// Expert parallel: per MoE layer and micro-batch the dispatch and combine
// all-to-alls forward and again backward (and the forward pair once more
// under full recompute), each moving this rank's routed rows x top-k x
// hidden, (ep-1)/ep of it to other ranks; not overlapped.
void price_ep_comm(const StepContext& c, StepTime& r) {
  const MemoryQuery& q = c.q;
  const ModelConfig& m = c.m;
  const DeviceProfile& d = c.d;
  if (q.ep <= 1 || !m.moe.enabled()) return;
  const double rows = static_cast<double>(q.micro_batch) * q.seq_len / q.cp /
                      (q.sequence_parallel && q.tp > 1 ? q.tp : 1);
  const double bytes = rows * m.moe.topk * m.hidden * c.elem_bytes * q.ep_load_factor();
  const LinkCost& ep_link = q.tp * q.cp * q.ep <= d.devices_per_node ? d.intra_node : d.inter_node;
  const double a2a = (q.ep - 1) * ep_link.message_s(bytes / q.ep);
  r.ep_comm_s = c.per_layer * a2a * c.moe_layers / q.pp * c.micro;
}

// Blocking collectives in the passes: tp's (sp's reduce-scatter and
// all-gather are two each) and ep's. On a calibrated machine whose ranks
// own their cores each waits for the group's last rank, the work since
// the previous one spread evenly between them (plan/arrival_wait.h);
// with shared cores a waiting rank yields its core, which the
// time-sharing term (price_core_sharing) prices instead.
void price_sync_waits(StepContext& c, StepTime& r) {
  const MemoryQuery& q = c.q;
  const DeviceProfile& d = c.d;
  const double micro = c.micro;
  c.tp_syncs =
      q.tp > 1 ? c.per_layer * (q.sequence_parallel ? 2.0 : 1.0) * c.layers_here * micro : 0.0;
  c.ep_syncs = q.ep > 1 ? c.per_layer * c.moe_layers / q.pp * micro : 0.0;
  c.waits_priced = c.costs != nullptr && d.arrival_jitter > 0 && c.shared <= 1.0;
  c.work_s = r.compute_s + r.elementwise_s + r.ep_imbalance_s;
  if (c.waits_priced && c.tp_syncs + c.ep_syncs > 0) {
    const double between = c.work_s / (c.tp_syncs + c.ep_syncs);
    r.sync_wait_s = c.tp_syncs * arrival_wait_s(d.arrival_jitter, between, q.tp) +
                    c.ep_syncs * arrival_wait_s(d.arrival_jitter, between, q.ep);
  }
  r.syncs = c.tp_syncs + c.ep_syncs;
  if (q.cp > 1)
    r.syncs += (q.recompute == Recompute::Full ? 4.0 : 3.0) * (q.cp - 1) * c.layers_here * micro;
}

// Pipeline: bubble and the boundary sends.
void price_pipeline(const StepContext& c, StepTime& r) {
  const MemoryQuery& q = c.q;
  const DeviceProfile& d = c.d;
  const double micro = c.micro;
  if (q.pp <= 1) return;
  const double stage_per_micro = (r.compute_s + r.elementwise_s + r.tp_comm_s + r.cp_comm_s +
                                  r.ep_comm_s + r.ep_imbalance_s + r.sync_wait_s) /
                                 micro;
  const bool v_shape = q.schedule == pipeline::ScheduleKind::DualPipeV;
  const double v = q.schedule == pipeline::ScheduleKind::Interleaved ? q.virtual_stages
                   : v_shape                                          ? 2
                                                                      : 1;
  // ZB-H1 fills the bubble with deferred weight-gradient passes: (p-1)
  // (F + B - W) once there are pp micro-batches to defer (Qi et al.; a
  // third of 1F1B's when F = B = W); with a single micro-batch only each
  // stage's own W overlaps the stage before it, leaving (p-1)(F + B);
  // linear in between. parallm defers only the tp linears' dW, so on a
  // calibrated machine W is the share those GEMMs take (an MoE stage's
  // experts keep theirs in B).
  const double deferred = std::min(1.0, (micro - 1.0) / std::max(1, q.pp - 1));
  // DualPipeV idles (p-1) half-stage forwards per stage (simulated at
  // F = B = W, docs/pipeline.md): half of ZB-H1's full deferral.
  const double bubble_micro = q.schedule == pipeline::ScheduleKind::ZeroBubbleH1
                                  ? (q.pp - 1) * (c.f_share + c.b_share - deferred * c.w_share)
                              : v_shape ? (q.pp - 1) * c.f_share / 2
                                        : (q.pp - 1) / v;
  r.pp_bubble_s = bubble_micro * stage_per_micro;
  const bool across = q.tp * q.cp * q.dp >= d.devices_per_node;
  const LinkCost& link = across ? d.inter_node : d.intra_node;
  const double send = c.act_bytes / q.tp;  // Megatron's scatter-gather p2p: 1/t per rank
  r.pp_p2p_s = 2.0 * micro * v * link.message_s(send);
  r.syncs += 2.0 * micro * v;
}

// The parameters this rank's gradients reduce and its optimizer updates:
// dense over dp x cp, routed experts over expert-dp (dp x cp / ep).
struct DpShards {
  double params_dev = 0, expert_dev = 0, dense_dev = 0;
  int dp_cp = 1, edp = 1;
};

DpShards dp_shards(const MemoryQuery& q) {
  const MemoryBreakdown mem = estimate_memory(q);
  DpShards s;
  s.params_dev = static_cast<double>(mem.params_per_rank);
  s.expert_dev = static_cast<double>(mem.expert_params_per_rank);
  s.dense_dev = s.params_dev - s.expert_dev;
  s.dp_cp = q.dp * q.cp;
  s.edp = std::max(1, s.dp_cp / q.ep);
  return s;
}

// One all-reduce of all gradients (fp32), in --bucket-mb buckets.
double dp_all_reduce_s(const StepContext& c, const DpShards& s) {
  const MemoryQuery& q = c.q;
  const DeviceProfile& d = c.d;
  // Ranks are ordered tp fastest, then cp, dp, pp (docs/grid.md): a dp group
  // spans tp x cp x dp consecutive ranks, pp neighbours are that far apart.
  const bool dp_across = q.tp * q.cp * q.dp > d.devices_per_node;
  const LinkCost& dp_link = dp_across ? d.inter_node : d.intra_node;
  const double bucket = q.bucket_mb * 1024.0 * 1024.0;
  return bucketed_all_reduce_s(s.dense_dev * 4.0, bucket, s.dp_cp, dp_link) +
         bucketed_all_reduce_s(s.expert_dev * 4.0, bucket, s.edp, dp_link);
}

// Data-parallel gradient reduction over dp x cp (fp32 gradients); routed
// experts' over expert-dp (dp x cp / ep) instead. Returns the parameter
// gather's seconds (ZeRO-1/2; 0 otherwise), which the dp syncs count.
double price_dp_reduction(const StepContext& c, const DpShards& s, StepTime& r) {
  const MemoryQuery& q = c.q;
  const double micro = c.micro;
  // One all-reduce of all gradients = a reduce-scatter + an all-gather of
  // the same volume (half the time each).
  const double all_reduce = dp_all_reduce_s(c, s);
  const double half = all_reduce / 2;
  // DDP and ZeRO-1 keep whole gradients and reduce once a step. ZeRO-2/3
  // keep only their shard, so every micro-batch's gradients are
  // reduce-scattered as backward completes them (grad_shard_reducer.h);
  // ZeRO-3 also gathers each unit's parameters before its forward and its
  // backward, every micro-batch (param_gatherer.h), and writes its shard in
  // place; ZeRO-1/2 all-gather the parameters once after the update.
  double overlappable = 0, gather_s = 0, window = (r.compute_s + r.elementwise_s) * 2.0 / 3.0;
  if (q.zero <= 1) {
    overlappable = q.zero == 1 ? half : all_reduce;  // DDP's buckets; ZeRO-1's reduce-scatter
    gather_s = q.zero == 1 ? half : 0.0;
  } else if (q.zero == 2) {
    overlappable = half * micro;
    gather_s = half;
  } else {
    overlappable = 3.0 * half * micro;  // prefetched gathers hide behind forward too
    window = r.compute_s + r.elementwise_s;
  }
  r.dp_comm_s = overlappable + gather_s;
  // Without pipelining the reductions overlap the passes that produce them;
  // with it the DP work waits for the pipeline's flush. On a calibrated CPU
  // machine nothing overlaps: shared-memory MPI moves and sums the bytes on
  // the ranks' own cores (while they poll), the cores the compute needs.
  if (c.costs != nullptr) window = 0.0;
  r.dp_exposed_s = gather_s + (q.pp == 1 ? std::max(0.0, overlappable - window) : overlappable);
  return gather_s;
}

// The dp group meets once a step (ZeRO-2/3: after every micro-batch's
// backward), and ZeRO-1/2 once more for the gather after the update.
void price_dp_syncs(const StepContext& c, const DpShards& s, double gather_s, StepTime& r) {
  const MemoryQuery& q = c.q;
  const DeviceProfile& d = c.d;
  if (s.dp_cp <= 1) return;
  const double dp_syncs = q.zero >= 2 ? c.micro : 1.0;
  r.syncs += dp_syncs + (gather_s > 0 ? 1.0 : 0.0);
  if (c.waits_priced)
    r.sync_wait_s +=
        dp_syncs *
        arrival_wait_s(d.arrival_jitter, c.work_s / (dp_syncs + c.tp_syncs + c.ep_syncs), s.dp_cp);
}

// Optimizer: fp32 master, two Adam moments and the gradient read, three
// written, over the shard this rank updates.
void price_optimizer(const StepContext& c, const DpShards& s, StepTime& r) {
  const double shard = c.q.zero >= 1 ? s.dense_dev / s.dp_cp + s.expert_dev / s.edp : s.params_dev;
  r.optimizer_s = c.costs != nullptr ? shard * c.costs->optimizer_s_per_param
                                     : shard * 28.0 / c.d.memory_bytes_per_s;
}

// Under sharing, the ep groups' round-robin phases beyond an even share of
// the cores: with one stage every rank of an ep group is at the same
// dispatch, and the cores serve the group round robin
// (processor_sharing.h), which the even share underprices.
double round_robin_excess_s(const StepContext& c, const StepTime& r) {
  const MemoryQuery& q = c.q;
  double uneven = 0;  // the ep groups' round-robin phases beyond an even share
  if (q.pp == 1 && r.ep_imbalance_s > 0 && c.costs != nullptr) {
    const double L = q.ep_load_factor(), e = r.ep_imbalance_s / (L - 1.0);  // mean expert work
    std::vector<double> loads;  // per group: the busiest rank, the rest share what is left
    for (int g = 0; g < std::max(1, c.on_node / q.ep); ++g) {
      loads.push_back(L * e);
      for (int i = 1; i < q.ep; ++i) loads.push_back((q.ep - L) / (q.ep - 1) * e);
    }
    uneven = std::max(0.0, processor_sharing_s(loads, c.costs->threads, c.d.cores) - c.shared * e);
  }
  return uneven;
}

// Ranks sharing cores: the cores are work-conserving (waiting ranks yield,
// mpirun's yield_when_idle), so a step takes the longer of its critical
// path and all ranks' busy time over the cores; a pipeline bubble is idle
// time another stage's work fills. The wait for the busiest ep rank is
// filled only across pipeline stages (round_robin_excess_s).
void price_core_sharing(const StepContext& c, StepTime& r) {
  if (c.shared <= 1.0) return;
  const double busy = r.total_s - r.pp_bubble_s - r.ep_imbalance_s;
  const double uneven = round_robin_excess_s(c, r);
  r.core_sharing_s = std::max(0.0, c.shared * busy + uneven - r.total_s);
  r.total_s += r.core_sharing_s;
}

// The critical path: compute, exchanges, waits, the bubble, the optimizer
// and only the share of the dp work that the passes do not hide.
void sum_step_terms(StepTime& r) {
  r.total_s = r.compute_s + r.elementwise_s + r.tp_comm_s + r.cp_comm_s + r.ep_comm_s +
              r.ep_imbalance_s + r.pp_bubble_s + r.pp_p2p_s + r.dp_exposed_s + r.optimizer_s +
              r.sync_wait_s;
}

// Rates over the step: achieved hardware FLOP/s, MFU, tokens per second.
void price_rates(const StepContext& c, StepTime& r) {
  r.hw_flops_per_device = c.hw_flops_dev / r.total_s;
  r.mfu = c.model_per_token * c.tokens / c.devices / r.total_s / c.d.peak_flops;
  r.tokens_per_s = c.tokens / r.total_s;
}

}  // namespace

// One term after another; the order matters where a term reads those
// before it (the bubble prices the stage's time, the waits its work).
StepTime predict_step_time(const MemoryQuery& q, const DeviceProfile& d) {
  StepContext c = make_step_context(q, d);
  StepTime r;
  if (c.costs != nullptr)
    price_compute_calibrated(c, r);
  else
    price_compute_analytic(c, r);
  price_tp_comm(c, r);
  price_cp_comm(c, r);
  price_ep_comm(c, r);
  price_sync_waits(c, r);
  price_pipeline(c, r);
  const DpShards s = dp_shards(q);
  const double gather_s = price_dp_reduction(c, s, r);
  price_dp_syncs(c, s, gather_s, r);
  price_optimizer(c, s, r);
  sum_step_terms(r);
  price_core_sharing(c, r);
  price_rates(c, r);
  return r;
}

}  // namespace parallm
