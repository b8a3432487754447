#include "parallel/data/data_parallel.h"

#include <cmath>

#include "base/error.h"
#include "kernels/cpu/optimizer.h"

namespace parallm {

DataParallel::DataParallel(Transformer& model, comm::Communicator* dp, const DpOptions& opts,
                           const AdamWConfig& adam, Allocator& alloc)
    : model_(model), dp_(dp), opts_(opts) {
  PX_CHECK(dp != nullptr || opts.dp == 1, "data parallel size {} needs a dp group", opts.dp);
  PX_CHECK(dp == nullptr || dp->size() == opts.dp,
           "the dp group has {} ranks but data parallel size is {}", dp ? dp->size() : 1,
           opts.dp);
  PX_CHECK(opts.zero <= 2, "ZeRO stage 3 is not implemented yet");
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
    if (is_server()) opt_ = std::make_unique<AdamW>(ps, adam, alloc);
  } else if (opts.zero >= 1) {
    opt_ = std::make_unique<AdamW>(ps, adam, alloc, update_begin_, update_end_,
                                   shards_.shard_size());
  } else {
    opt_ = std::make_unique<AdamW>(ps, adam, alloc);
  }
  if (multi()) {
    GradTarget target = ps_mode            ? GradTarget::Root
                        : opts.zero >= 2   ? GradTarget::Owners
                                           : GradTarget::AllRanks;
    reducer_ = std::make_unique<GradReducer>(
        *dp_, ps.flat_grads().data<float>(),
        plan_buckets(model.grad_segments(), opts.bucket_elems()), target, shards_, opts.overlap);
    model_.set_grad_ready_hook([this](int s) { reducer_->on_segment_ready(s); });
  }
}

DataParallel::~DataParallel() { model_.set_grad_ready_hook({}); }

void DataParallel::begin_step() { model_.params().zero_grads(); }

void DataParallel::begin_micro_batch(bool last) {
  if (last && reducer_) reducer_->arm();
}

DpStepResult DataParallel::finish_step(double local_loss_sum, double lr, double clip) {
  DpStepResult res;
  const ParameterSet& ps = model_.params();
  float* g = ps.flat_grads().data<float>();
  if (reducer_) reducer_->finish(res.comm);

  double sums[2] = {local_loss_sum, cpu::sum_squares(g + norm_begin_, norm_end_ - norm_begin_)};
  if (multi()) {
    ExposedTimer t(res.comm);
    dp_->all_reduce(sums, 2, DType::F64, comm::ReduceOp::Sum);
    res.comm.bytes += sizeof(sums);
    ++res.comm.collectives;
  }
  res.loss_sum = sums[0];
  res.grad_norm = std::sqrt(sums[1]);
  PX_CHECK(std::isfinite(res.loss_sum) && std::isfinite(res.grad_norm),
           "non-finite loss ({}) or gradient norm ({})", res.loss_sum, res.grad_norm);
  // torch.nn.utils.clip_grad_norm_ semantics, on the range this rank updates.
  if (clip > 0.0 && clip / (res.grad_norm + 1e-6) < 1.0)
    cpu::scale_inplace(g + update_begin_, update_end_ - update_begin_,
                       static_cast<float>(clip / (res.grad_norm + 1e-6)));
  if (opt_) opt_->step(ps, lr);
  if (multi()) sync_parameters(res.comm);
  return res;
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
