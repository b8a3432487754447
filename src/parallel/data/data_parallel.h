// DataParallel: what a training step does around forward/backward when the
// global batch is split over a data-parallel group. It owns the gradient
// reducer (bucketed, overlapped with backward), the optimizer (replicated,
// sharded by ZeRO, or on the parameter server only) and the parameter sync
// after the update. Invariant: after finish_step every rank holds the same
// parameters as a one-process run on the whole global batch (up to fp32
// summation order), for every stage and mode. With dp == 1 (or no group) it
// is the plain one-process step and makes no communication. Stages 2 and 3
// (dp > 1) keep gradients, and under stage 3 values, only as this rank's
// shard (parallel/zero/): the model's pointers are rebound unit by unit.
// With tensor parallelism the dp group is this rank's dp group only (ranks
// with the same tp rank), which holds the same shards; the global norm also
// sums over the model's tp group.
#pragma once
#include <memory>
#include <string>

#include "comm/communicator.h"
#include "model/transformer.h"
#include "optim/optimizer.h"
#include "parallel/data/dp_options.h"
#include "parallel/data/grad_reducer.h"
#include "parallel/zero/grad_shard_reducer.h"
#include "parallel/zero/param_gatherer.h"

namespace parallm {

struct DpStepResult {
  double loss_sum = 0.0;   // sum of token losses over the whole global batch
  double grad_norm = 0.0;  // global, before clipping
  CommStats comm;
  bool skipped = false;    // non-finite loss or gradients: no update (StepGuard)
  std::string nonfinite;   // where, when the loss or a gradient was non-finite
};

// Mixed precision and NaN handling around the update (docs/mixed_precision.md).
// The global gradient norm is reduced over every group, so a NaN/Inf on any
// rank makes it non-finite on all: every rank skips (or fails) together.
struct StepGuard {
  double grad_unscale = 1.0;     // gradients *= this before the norm (1 / loss scale)
  bool skip_nonfinite = false;   // a non-finite loss or norm: skip the update, else throw
};

class DataParallel {
 public:
  // dp: the data-parallel group (size opts.dp), or nullptr when opts.dp == 1.
  // Installs a gradient hook on the model; the model must outlive this.
  DataParallel(Transformer& model, comm::Communicator* dp, const DpOptions& opts,
               const OptimizerConfig& optim, Allocator& alloc);
  ~DataParallel();
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
  const float* shard_values() const;
  const GradReducer* reducer() const { return reducer_.get(); }
  // Bytes of unit buffers (tag communication) of ZeRO-2/3, 0 otherwise.
  int64_t unit_buffer_bytes() const;
  // Collective: the full flat parameter vector (ZeRO-3 gathers it).
  std::vector<float> full_parameters();

  // Pipeline parallelism: the loss (last stage only) and the squared norm
  // are also summed over the pp group (each stage holds different layers).
  void set_pipeline_group(comm::Communicator* pp) { pp_ = pp; }

  void begin_step();                  // zeroes the gradients
  void begin_micro_batch(bool last);  // the last one reduces during its backward
  // After the step's micro-batches: finish the reduction, global loss and
  // norm, clip, update, parameter sync. local_loss_sum: this rank's part.
  DpStepResult finish_step(double local_loss_sum, double lr, double clip,
                           const StepGuard& guard = {});

 private:
  bool multi() const { return dp_ != nullptr && dp_->size() > 1; }
  bool is_server() const { return dp_rank() == 0; }
  void sync_parameters(CommStats& stats);
  void on_unit(Transformer::UnitPass pass, int segment);
  // Collective: names the first non-finite gradient and value (optim/nonfinite.h).
  std::string locate_nonfinite(const float* gn);

  Transformer& model_;
  comm::Communicator* dp_;
  comm::Communicator* pp_ = nullptr;
  DpOptions opts_;
  ShardLayout shards_;
  int64_t norm_begin_ = 0, norm_end_ = 0;      // gradients whose squares this rank counts
  int64_t update_begin_ = 0, update_end_ = 0;  // parameters this rank updates
  std::unique_ptr<GradReducer> reducer_;
  std::unique_ptr<Optimizer> opt_;
  std::unique_ptr<GradShardReducer> shard_reducer_;  // ZeRO-2/3
  std::unique_ptr<ParamGatherer> gatherer_;          // ZeRO-3
};

}  // namespace parallm
