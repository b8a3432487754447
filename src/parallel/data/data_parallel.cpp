#include "parallel/data/data_parallel.h"

#include <cmath>

#include "base/error.h"
#include "kernels/cpu/optimizer.h"
#include "optim/nonfinite.h"
#include "parallel/tensor/tp_grad_norm.h"

namespace parallm {

DataParallel::DataParallel(Transformer& model, comm::Communicator* dp, const DpOptions& opts,
                           const OptimizerConfig& optim, Allocator& alloc)
    : model_(model), dp_(dp), opts_(opts) {
  PX_CHECK(dp != nullptr || opts.dp == 1, "data parallel size {} needs a dp group", opts.dp);
  PX_CHECK(dp == nullptr || dp->size() == opts.dp,
           "the dp group has {} ranks but data parallel size is {}", dp ? dp->size() : 1,
           opts.dp);
  const ParameterSet& ps = model.params();
  const int64_t total = ps.total_numel();
  const int r = dp_rank();
  shards_ = ShardLayout{total, dp_size()};
  const bool ps_mode = opts.mode == DpMode::ParameterServer;
  // Replicated gradients (DDP, ZeRO-1) are identical on every rank: each
  // counts its shard's squares once, so the reduced norm has no duplicates.
  if (ps_mode) {
    norm_end_ = update_end_ = is_server() ? total : 0;
  } else {
    norm_begin_ = shards_.begin(r);
    norm_end_ = shards_.end(r);
    update_begin_ = opts.zero >= 1 ? norm_begin_ : 0;
    update_end_ = opts.zero >= 1 ? norm_end_ : total;
  }
  if (ps_mode) {
    if (is_server()) opt_ = make_optimizer(optim, ps, alloc, 0, total, total, model.tp());
  } else if (opts.zero >= 1) {
    opt_ = make_optimizer(optim, ps, alloc, update_begin_, update_end_, shards_.shard_size(),
                          model.tp(), multi() ? dp_ : nullptr);
  } else {
    opt_ = make_optimizer(optim, ps, alloc, 0, total, total, model.tp());
  }
  if (multi() && opts.zero >= 2) {
    shard_reducer_ = std::make_unique<GradShardReducer>(*dp_, model, shards_, opts.overlap, alloc);
    if (opts.zero >= 3) gatherer_ = std::make_unique<ParamGatherer>(*dp_, model, shards_, alloc);
    model_.set_grad_ready_hook([this](int s) { shard_reducer_->on_segment_ready(s); });
    model_.set_unit_hook([this](Transformer::UnitPass p, int s) { on_unit(p, s); });
  } else if (multi()) {
    GradTarget target = ps_mode            ? GradTarget::Root
                        : opts.zero >= 2   ? GradTarget::Owners
                                           : GradTarget::AllRanks;
    reducer_ = std::make_unique<GradReducer>(
        *dp_, ps.flat_grads().data<float>(),
        plan_buckets(model.grad_segments(), opts.bucket_elems()), target, shards_, opts.overlap);
    model_.set_grad_ready_hook([this](int s) { reducer_->on_segment_ready(s); });
  }
}

DataParallel::~DataParallel() {
  model_.set_grad_ready_hook({});
  model_.set_unit_hook({});
}

void DataParallel::begin_step() {
  model_.params().zero_grads();
  if (shard_reducer_) shard_reducer_->zero_shard();
}

// Units run embedding (L+1), blocks (L..1), tail (0) forward, then 0..L+1
// backward; the embedding's gradients and values stay in pinned buffers.
void DataParallel::on_unit(Transformer::UnitPass pass, int segment) {
  const int last = static_cast<int>(model_.grad_segments().size()) - 1;
  const bool fwd = pass == Transformer::UnitPass::Forward;
  if (gatherer_) {
    int next = -1;
    if (fwd) next = segment > 0 ? segment - 1 : -1;
    else if (segment < last - 1) next = segment + 1;
    gatherer_->acquire(segment, next);
  }
  if (!fwd && segment != last) {
    if (segment == 0) shard_reducer_->prepare(last);  // a tied head writes it first
    shard_reducer_->prepare(segment);
  }
}

int64_t DataParallel::unit_buffer_bytes() const {
  return (shard_reducer_ ? shard_reducer_->staging_bytes() : 0) +
         (gatherer_ ? gatherer_->buffer_bytes() : 0);
}

const float* DataParallel::shard_values() const {
  if (gatherer_) return gatherer_->shard();
  return model_.params().flat_values().data<float>() + shards_.begin(dp_rank());
}

std::vector<float> DataParallel::full_parameters() {
  if (gatherer_) return gatherer_->full_values();
  const Tensor& v = model_.params().flat_values();
  return std::vector<float>(v.data<float>(), v.data<float>() + v.numel());
}

void DataParallel::begin_micro_batch(bool last) {
  if (last && reducer_) reducer_->arm();
}

DpStepResult DataParallel::finish_step(double local_loss_sum, double lr, double clip,
                                       const StepGuard& guard) {
  DpStepResult res;
  const ParameterSet& ps = model_.params();
  if (reducer_) reducer_->finish(res.comm);
  if (shard_reducer_) shard_reducer_->finish(res.comm);
  if (gatherer_) gatherer_->take_stats(res.comm);
  // gn[k], gu[k]: gradients of flat elements norm_begin_ + k, update_begin_ + k.
  float* gn = shard_reducer_ ? shard_reducer_->shard() : ps.flat_grads().data<float>() + norm_begin_;
  float* gu = shard_reducer_ ? shard_reducer_->shard()
                             : ps.flat_grads().data<float>() + update_begin_;

  // Unscale (fp16 loss scaling) before the norm, so clipping sees true values;
  // the norm range lies inside the update range on every rank.
  if (guard.grad_unscale != 1.0)
    cpu::scale_inplace(gu, update_end_ - update_begin_, static_cast<float>(guard.grad_unscale));
  // Under tensor parallelism each tp rank holds its shards: the squares are
  // summed over tp too, replicated parameters counted once (tp_grad_norm.h).
  const TpGroup& tp = model_.tp();
  double sums[2] = {local_loss_sum, tp_grad_sum_squares(ps, gn, norm_begin_, norm_end_, tp)};
  if (multi()) {
    ExposedTimer t(res.comm);
    dp_->all_reduce(sums, 2, DType::F64, comm::ReduceOp::Sum);
    res.comm.bytes += sizeof(sums);
    ++res.comm.collectives;
  }
  if (tp.active()) {  // the loss is already the full loss on every tp rank
    TpCommTimer timer(*tp.counters);
    tp.comm->all_reduce(&sums[1], 1, DType::F64, comm::ReduceOp::Sum);
    tp.counters->tp_bytes += sizeof(double);
    ++tp.counters->tp_collectives;
  }
  if (pp_ != nullptr && pp_->size() > 1)  // stages hold disjoint layers; the loss is the last's
    pp_->all_reduce(sums, 2, DType::F64, comm::ReduceOp::Sum);
  res.loss_sum = sums[0];
  res.grad_norm = std::sqrt(sums[1]);
  if (!std::isfinite(res.loss_sum) || !std::isfinite(res.grad_norm)) {
    res.nonfinite = locate_nonfinite(gn);
    PX_CHECK(guard.skip_nonfinite, "non-finite loss ({}) or gradient norm ({}): {}",
             res.loss_sum, res.grad_norm, res.nonfinite);
    res.skipped = true;  // no update, no parameter sync: every rank keeps its values
    return res;
  }
  // torch.nn.utils.clip_grad_norm_ semantics, on the range this rank updates.
  if (clip > 0.0 && clip / (res.grad_norm + 1e-6) < 1.0)
    cpu::scale_inplace(gu, update_end_ - update_begin_,
                       static_cast<float>(clip / (res.grad_norm + 1e-6)));
  if (gatherer_) {
    opt_->step_range(ps, lr, gatherer_->shard(), gu);
    gatherer_->invalidate();  // no sync: units are gathered again on demand
  } else if (shard_reducer_) {
    opt_->step_range(ps, lr, ps.flat_values().data<float>() + update_begin_, gu);
  } else if (opt_) {
    opt_->step(ps, lr);
  }
  if (multi() && !gatherer_) sync_parameters(res.comm);
  return res;
}

std::string DataParallel::locate_nonfinite(const float* gn) {
  double keys[2] = {
      static_cast<double>(first_nonfinite_grad(model_, gn, norm_begin_, norm_end_)),
      static_cast<double>(first_nonfinite_value(model_.params()))};
  if (multi()) dp_->all_reduce(keys, 2, DType::F64, comm::ReduceOp::Min);
  if (model_.tp().active()) model_.tp().comm->all_reduce(keys, 2, DType::F64, comm::ReduceOp::Min);
  const auto g = static_cast<int64_t>(keys[0]), v = static_cast<int64_t>(keys[1]);
  std::string out = g == kNoNonfinite
                        ? "no non-finite gradient"
                        : "first non-finite gradient (backward order) in " +
                              grad_order_name(model_, g);
  if (v != kNoNonfinite)
    out += "; first non-finite parameter value in " +
           model_.params().spec(static_cast<int>(v)).name;
  return out;
}

void DataParallel::sync_parameters(CommStats& stats) {
  float* v = model_.params().flat_values().data<float>();
  ExposedTimer t(stats);
  if (opts_.mode == DpMode::ParameterServer) {
    dp_->broadcast(v, static_cast<size_t>(shards_.total), DType::F32, 0);
    stats.bytes += shards_.total * 4;
    ++stats.collectives;
    return;
  }
  if (opts_.zero == 0) return;
  const int r = dp_rank();
  if (shards_.even()) {  // in place: this rank's block already sits at r * S
    const auto S = static_cast<size_t>(shards_.shard_size());
    dp_->all_gather(v + r * S, v, S, DType::F32);
    stats.bytes += static_cast<int64_t>(S * 4);
    ++stats.collectives;
    return;
  }
  // Uneven: the last shard is short, so each owner broadcasts its exact range
  // (no padded copy of the whole buffer is needed).
  for (int o = 0; o < shards_.dp; ++o) {
    const int64_t n = shards_.end(o) - shards_.begin(o);
    if (n == 0) continue;
    dp_->broadcast(v + shards_.begin(o), static_cast<size_t>(n), DType::F32, o);
    if (o == r) stats.bytes += n * 4;
    ++stats.collectives;
  }
}

}  // namespace parallm
