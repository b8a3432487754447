#include "parallel/data/data_parallel.h"

#include <cmath>
#include <optional>

#include "base/error.h"
#include "ops/optimizer.h"
#include "optim/grad_clip.h"
#include "optim/nonfinite.h"
#include "parallel/data/ddp.h"
#include "parallel/data/parameter_server.h"
#include "parallel/zero/zero1.h"
#include "parallel/zero/zero2.h"
#include "parallel/zero/zero3.h"

namespace parallm {

DataParallel::DataParallel(TrainableModel& model, comm::Communicator* dp, const DpOptions& opts)
    : model_(model), dp_(dp), opts_(opts) {
  PX_CHECK(dp != nullptr || opts.dp == 1, "data parallel size {} needs a dp group", opts.dp);
  PX_CHECK(dp == nullptr || dp->size() == opts.dp,
           "the dp group has {} ranks but data parallel size is {}", dp ? dp->size() : 1, opts.dp);
  shards_ = ShardLayout{model.params().total_numel(), dp_size()};
  if (!model.ep().active()) return;
  const ParameterSet& ps = model.params();
  for (int i = 0; i < ps.size(); ++i) {
    if (!ps.spec(i).expert) continue;
    const int64_t lo = ps.offset(i), hi = lo + ps.numel(i);
    if (!expert_ranges_.empty() && expert_ranges_.back().second == lo)
      expert_ranges_.back().second = hi;
    else
      expert_ranges_.emplace_back(lo, hi);
  }
}

void DataParallel::reduce_expert_grads() {
  if (edp_ == nullptr || edp_->size() == 1) return;
  float* g = model_.params().flat_grads().data<float>();
  for (const auto& [lo, hi] : expert_ranges_)
    edp_->all_reduce(g + lo, g + lo, static_cast<size_t>(hi - lo), DType::F32, comm::ReduceOp::Sum);
}

DataParallel::~DataParallel() {
  model_.set_grad_ready_hook({});
  model_.set_unit_hook({});
}

std::unique_ptr<DataParallel> make_data_parallel(TrainableModel& model, comm::Communicator* dp,
                                                 const DpOptions& opts,
                                                 const OptimizerConfig& optim, Allocator& alloc,
                                                 comm::Communicator* edp) {
  const bool multi = dp != nullptr && dp->size() > 1;
  PX_CHECK(!model.ep().active() || opts.mode == DpMode::AllReduce,
           "expert parallelism (ep {}) does not run with the parameter server (dp mode {}): use "
           "DDP or ZeRO-1/2/3",
           model.ep().size(), dp_mode_name(opts.mode));
  if (multi && opts.mode == DpMode::ParameterServer)
    return std::make_unique<ParameterServer>(model, dp, opts, optim, alloc);
  if (multi && opts.zero == 1) return std::make_unique<Zero1>(model, dp, opts, optim, alloc, edp);
  if (multi && opts.zero == 2) return std::make_unique<Zero2>(model, dp, opts, optim, alloc, edp);
  if (multi && opts.zero == 3) return std::make_unique<Zero3>(model, dp, opts, optim, alloc, edp);
  return std::make_unique<Ddp>(model, dp, opts, optim, alloc);
}

void DataParallel::begin_step() { model_.params().zero_grads(); }

const float* DataParallel::shard_values() const {
  return model_.params().flat_values().data<float>() + shards_.begin(dp_rank());
}

std::vector<float> DataParallel::full_parameters() {
  const Tensor& v = model_.params().flat_values();
  return std::vector<float>(v.data<float>(), v.data<float>() + v.numel());
}

float* DataParallel::norm_grads() const {
  return model_.params().flat_grads().data<float>() + norm_begin_;
}

float* DataParallel::update_grads() const {
  return model_.params().flat_grads().data<float>() + update_begin_;
}

DpStepResult DataParallel::finish_step(double local_loss_sum, double lr, double clip,
                                       const StepGuard& guard) {
  DpStepResult res;
  finish_reduction();
  // gn[k], gu[k]: gradients of flat elements norm_begin_ + k, update_begin_ + k.
  float* gn = norm_grads();
  float* gu = update_grads();
  const int64_t n_update = update_count();
  // Unscale (fp16 loss scaling) before the norm, so clipping sees true values;
  // the norm range lies inside the update range on every rank.
  if (guard.grad_unscale != 1.0)
    ops::scale_inplace(model_.params().stream(), gu, n_update,
                       static_cast<float>(guard.grad_unscale));
  double loss = local_loss_sum;
  const GradNormGroups groups{.dp = dp_, .tp = &model_.tp(), .pp = pp_};
  res.grad_norm = grad_norm(gn, groups, {&loss, 1});
  res.loss_sum = loss;
  if (!std::isfinite(res.loss_sum) || !std::isfinite(res.grad_norm)) {
    res.nonfinite = locate_nonfinite(gn);
    PX_CHECK(guard.skip_nonfinite, "non-finite loss ({}) or gradient norm ({}): {}", res.loss_sum,
             res.grad_norm, res.nonfinite);
    res.skipped = true;  // no update, no parameter sync: every rank keeps its values
    return res;
  }
  clip_grad_norm(model_.params().stream(), gu, n_update, res.grad_norm,
                 clip);  // on the range this rank updates
  update(lr, gu);
  return res;
}

double DataParallel::grad_norm(const float* gn, const GradNormGroups& groups,
                               std::span<double> also_summed) {
  GradNormGroups g = groups;
  if (!expert_ranges_.empty()) {  // each expert-dp group counts its experts once
    g.expert_grads = model_.params().flat_grads().data<float>();
    g.count_experts = edp_ == nullptr || edp_->rank() == 0;
  }
  return global_grad_norm(model_.params(), gn, norm_begin_, norm_end_, g, also_summed);
}

int64_t DataParallel::first_nonfinite_local(const float* gn) const {
  return first_nonfinite_grad(model_, gn, norm_begin_, norm_end_);
}

std::string DataParallel::locate_nonfinite(const float* gn) {
  double keys[2] = {static_cast<double>(first_nonfinite_local(gn)),
                    static_cast<double>(first_nonfinite_value(model_.params()))};
  if (multi()) dp_->all_reduce(keys, 2, DType::F64, comm::ReduceOp::Min);
  if (model_.tp().active()) model_.tp().comm->all_reduce(keys, 2, DType::F64, comm::ReduceOp::Min);
  const auto g = static_cast<int64_t>(keys[0]), v = static_cast<int64_t>(keys[1]);
  std::string out = g == kNoNonfinite ? "no non-finite gradient"
                                      : "first non-finite gradient (backward order) in " +
                                            grad_order_name(model_, g);
  if (v != kNoNonfinite)
    out +=
        "; first non-finite parameter value in " + model_.params().spec(static_cast<int>(v)).name;
  return out;
}

}  // namespace parallm
