// A step-time model of one training step for a layout on a device profile,
// in the manner of the Megatron (Narayanan et al. 2021) and Alpa cost
// models: compute is hardware FLOPs over the device's GEMM rate at the
// layout's matrix widths; memory-bound element-wise work is the activation
// bytes written and read back over HBM bandwidth; tensor-parallel collectives
// (4 per layer and micro-batch, 6 with full recomputation; ring all-reduce
// cost 2(t-1) messages of bytes / t, each alpha + size / bandwidth with the
// pair of its size band, the same for sp's reduce-scatter + all-gather) are
// not overlapped; the pipeline adds the
// schedule's bubble ((p-1)/v of a micro-batch's stage time) and its
// point-to-point sends; context parallel's ring transfers count beyond
// the attention time they overlap; expert parallel's all-to-alls count in
// full, and the group waits for its busiest rank's experts; the dp gradient
// reduction (fp32, in --bucket-mb buckets; ZeRO-2/3 every micro-batch)
// overlaps the backward pass only without pipelining, and ZeRO-3 adds the
// parameter gathers of every micro-batch's forward and backward; the
// optimizer step streams its states over HBM. On a calibrated machine
// every blocking tp, ep and dp collective also waits for the group's last
// rank (plan/arrival_wait.h). Where it is wrong: docs/planner.md.
#pragma once
#include "plan/device_profile.h"
#include "plan/memory_model.h"

namespace parallm {

struct StepTime {
  double compute_s = 0, elementwise_s = 0, tp_comm_s = 0, pp_bubble_s = 0, pp_p2p_s = 0;
  double cp_comm_s = 0;  // ring transfers attention does not hide
  double ep_comm_s = 0;  // expert dispatch and combine all-to-alls
  // The busiest ep rank's expert work beyond the mean (MemoryQuery::
  // ep_max_load), which every rank of the group waits for.
  double ep_imbalance_s = 0;
  double dp_comm_s = 0;     // the whole reduction
  double dp_exposed_s = 0;  // what the backward pass does not hide
  double optimizer_s = 0;
  // Calibrated profiles: the blocking collectives' waits for the rank that
  // arrives last (tp, ep and dp groups; plan/arrival_wait.h).
  double sync_wait_s = 0;
  // Blocking collectives and point-to-point exchanges a rank takes part in
  // per step (tp, ep, cp ring steps, pp sends, dp): the planner's tie-break.
  double syncs = 0;
  // Calibrated CPU profiles with more ranks than cores: what time-sharing
  // the cores adds to the critical path (plan/step_time.cpp).
  double core_sharing_s = 0;
  double total_s = 0;
  double hw_flops_per_device = 0;  // achieved, recomputation included (Megatron's TFLOP/s)
  double mfu = 0;                  // model FLOPs only, against the device's peak
  double tokens_per_s = 0;
  // Seconds the step's exchanges take on the wire, hidden or not: the
  // planner's second tie-break (the layout that moves least has the least
  // riding on the overlap and arrival terms, which are priced on average).
  double wire_s() const { return tp_comm_s + cp_comm_s + ep_comm_s + pp_p2p_s + dp_comm_s; }
};

// q: the model, the layout (tp, pp, dp, cp, virtual stages, schedule, sp,
// ZeRO), the micro-batch and micro-batches per step, recompute. 16-bit
// training is assumed (the profiles' peaks are 16-bit).
StepTime predict_step_time(const MemoryQuery& q, const DeviceProfile& d);

}  // namespace parallm
