// DataParallel: what a training step does around forward/backward when the
// global batch is split over a data-parallel group, as one interface over
// the techniques, each in a file named after it: Ddp (ddp.h: bucketed
// all-reduce overlapped with backward, replicated optimizer), ParameterServer
// (parameter_server.h), and ZeRO stages 1, 2 and 3 (parallel/zero/zero1.h,
// zero2.h, zero3.h). make_data_parallel picks one from DpOptions.
// Invariant: after finish_step every rank holds the same parameters as a
// one-process run on the whole global batch (up to fp32 summation order),
// for every technique. With dp == 1 (or no group) every technique is the
// plain one-process step (Ddp without communication). With tensor
// parallelism the dp group is this rank's dp group only (ranks with the
// same tp rank), which holds the same shards; the global norm also sums
// over the model's tp group (optim/grad_clip.h).
// Expert parallelism (model.ep() active, docs/moe.md): the ep ranks inside
// dp hold different experts, so expert gradients stay out of the dp
// reduction and are summed over the expert-dp group (set_expert_group)
// instead; DDP and ZeRO-1/2/3 (which shard expert optimizer state, ZeRO-2
// also gradients, ZeRO-3 also values, over expert-dp:
// parallel/zero/expert_shards.h). The parameter server is refused.
#pragma once
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "model/contract/model_contract.h"
#include "optim/grad_clip.h"
#include "optim/optimizer.h"
#include "parallel/data/dp_options.h"
#include "parallel/data/shard_layout.h"

namespace parallm {

// Values of the flat elements [span.begin, span.end), element span.begin at values[0].
struct ValueSpan {
  FlatSpan span;
  const float* values;
};

struct DpStepResult {
  double loss_sum = 0.0;   // sum of token losses over the whole global batch
  double grad_norm = 0.0;  // global, before clipping
  bool skipped = false;    // non-finite loss or gradients: no update (StepGuard)
  std::string nonfinite;   // where, when the loss or a gradient was non-finite
};

// Mixed precision and NaN handling around the update (docs/mixed_precision.md).
// The global gradient norm is reduced over every group, so a NaN/Inf on any
// rank makes it non-finite on all: every rank skips (or fails) together.
struct StepGuard {
  double grad_unscale = 1.0;    // gradients *= this before the norm (1 / loss scale)
  bool skip_nonfinite = false;  // a non-finite loss or norm: skip the update, else throw
};

class DataParallel {
 public:
  virtual ~DataParallel();
  DataParallel(const DataParallel&) = delete;
  DataParallel& operator=(const DataParallel&) = delete;

  int dp_rank() const { return dp_ ? dp_->rank() : 0; }
  int dp_size() const { return dp_ ? dp_->size() : 1; }
  const DpOptions& options() const { return opts_; }
  const ShardLayout& shards() const { return shards_; }
  // Null on a parameter-server worker (it keeps no optimizer state). It owns
  // the flat range [optimizer()->begin(), end()); state() names its buffers.
  const Optimizer* optimizer() const { return opt_.get(); }
  Optimizer* optimizer() { return opt_.get(); }
  // Values of flat elements [shards().begin(dp_rank()), end) as this rank
  // holds them (the ZeRO-3 shard, else the flat buffer); for checkpoints.
  virtual const float* shard_values() const;
  // ZeRO-3 under expert parallelism: the values this rank holds are spans
  // (its dense dp spans and expert expert-dp spans, flat order) instead of
  // shard_values()' range; what a checkpoint writes. nullopt otherwise.
  virtual std::optional<std::vector<ValueSpan>> owned_values() const { return std::nullopt; }
  // Bytes of unit buffers (tag communication) of ZeRO-2/3, 0 otherwise.
  virtual int64_t unit_buffer_bytes() const { return 0; }
  // Collective: the full flat parameter vector (ZeRO-3 gathers it).
  virtual std::vector<float> full_parameters();

  // Pipeline parallelism: the loss (last stage only) and the squared norm
  // are also summed over the pp group (each stage holds different layers).
  void set_pipeline_group(comm::Communicator* pp) { pp_ = pp; }
  // Expert parallelism: the expert-data-parallel group (null: size 1).
  void set_expert_group(comm::Communicator* edp) { edp_ = edp; }
  int edp_rank() const { return edp_ ? edp_->rank() : 0; }

  virtual void begin_step();                    // zeroes the gradients
  virtual void begin_micro_batch(bool last) {}  // the last one reduces during its backward
  // After the step's micro-batches: finish the reduction, global loss and
  // norm, clip, update, parameter sync. local_loss_sum: this rank's part.
  DpStepResult finish_step(double local_loss_sum, double lr, double clip,
                           const StepGuard& guard = {});

 protected:
  // dp: the data-parallel group (size opts.dp), or nullptr when opts.dp == 1.
  DataParallel(TrainableModel& model, comm::Communicator* dp, const DpOptions& opts);
  bool multi() const { return dp_ != nullptr && dp_->size() > 1; }
  // What each technique defines: completing the gradient reduction; where
  // the gradients of the norm range [norm_begin_, norm_end_) and of the
  // update range [update_begin_, update_end_) are; the update and the
  // parameter sync after it.
  virtual void finish_reduction() = 0;
  virtual float* norm_grads() const;
  virtual float* update_grads() const;
  virtual void update(double lr, float* grads) = 0;
  // Elements of update_grads() (unscaled and clipped in place).
  virtual int64_t update_count() const { return update_end_ - update_begin_; }
  // Collective: the global gradient norm from this rank's norm gradients gn.
  virtual double grad_norm(const float* gn, const GradNormGroups& groups,
                           std::span<double> also_summed);
  // Backward-order key of this rank's first non-finite gradient (optim/nonfinite.h).
  virtual int64_t first_nonfinite_local(const float* gn) const;

  TrainableModel& model_;
  comm::Communicator* dp_;
  comm::Communicator* pp_ = nullptr;
  comm::Communicator* edp_ = nullptr;
  // Flat ranges of expert parameters when ep is active (else empty): left
  // out of the dp reduction, summed over edp_.
  std::vector<std::pair<int64_t, int64_t>> expert_ranges_;
  void reduce_expert_grads();
  DpOptions opts_;
  ShardLayout shards_;
  // Gradients whose squares this rank counts: replicated gradients (DDP,
  // ZeRO-1) are identical on every rank, so each counts its shard's once.
  int64_t norm_begin_ = 0, norm_end_ = 0;
  int64_t update_begin_ = 0, update_end_ = 0;  // parameters this rank updates
  std::unique_ptr<Optimizer> opt_;

 private:
  // Collective: names the first non-finite gradient and value (optim/nonfinite.h).
  std::string locate_nonfinite(const float* gn);
};

// The technique opts names (dp == 1: the one-process step). Installs hooks
// on the model, which must outlive the result. edp: the expert-dp group of
// an expert-parallel model (null: size 1); set_expert_group is still due.
std::unique_ptr<DataParallel> make_data_parallel(TrainableModel& model, comm::Communicator* dp,
                                                 const DpOptions& opts,
                                                 const OptimizerConfig& optim, Allocator& alloc,
                                                 comm::Communicator* edp = nullptr);

}  // namespace parallm
