// GradReducer: reduces the gradient buffer over the data-parallel group one
// bucket at a time. Armed for the last micro-batch of a step, it starts each
// bucket's reduction asynchronously as soon as backward reports the bucket's
// last segment complete (TrainableModel::set_grad_ready_hook), so communication
// overlaps the remaining backward; finish() starts what is left and waits.
// Earlier micro-batches only accumulate locally (one reduction per step).
// Targets: all ranks (all-reduce, DDP / ZeRO-1), each element's owner under
// a ShardLayout (ZeRO-2: one reduce per owner a bucket touches), or rank 0
// (parameter server).
#pragma once
#include <utility>
#include <vector>

#include "comm/communicator.h"
#include "parallel/data/bucket_plan.h"
#include "parallel/data/shard_layout.h"

namespace parallm {

enum class GradTarget { AllRanks, Owners, Root };

class GradReducer {
 public:
  // grads: the model's flat fp32 gradient buffer (outlives the reducer).
  // skip: sorted disjoint flat ranges left out of every bucket (MoE expert
  // gradients under expert parallelism, reduced over expert-dp instead).
  GradReducer(comm::Communicator& dp, float* grads, std::vector<GradBucket> buckets,
              GradTarget target, ShardLayout shards, bool overlap,
              std::vector<std::pair<int64_t, int64_t>> skip = {});
  // The next backward is the step's last micro-batch: reduce during it.
  void arm();
  // The hook: segment `segment` of the model's grad_segments() is complete.
  void on_segment_ready(int segment);
  // Starts any bucket not yet started, waits for all. Disarms.
  void finish();
  const std::vector<GradBucket>& buckets() const { return buckets_; }

 private:
  void launch(const GradBucket& b);
  void launch_range(int64_t begin, int64_t end);

  comm::Communicator& dp_;
  float* grads_;
  std::vector<GradBucket> buckets_;
  GradTarget target_;
  ShardLayout shards_;
  bool overlap_;
  std::vector<std::pair<int64_t, int64_t>> skip_;
  bool armed_ = false;
  size_t next_ = 0;  // first bucket not yet started
  std::vector<comm::Work> in_flight_;
};

}  // namespace parallm
