#include "parallel/data/grad_reducer.h"

#include <algorithm>

#include "base/error.h"

namespace parallm {

GradReducer::GradReducer(comm::Communicator& dp, float* grads, std::vector<GradBucket> buckets,
                         GradTarget target, ShardLayout shards, bool overlap,
                         std::vector<std::pair<int64_t, int64_t>> skip)
    : dp_(dp),
      grads_(grads),
      buckets_(std::move(buckets)),
      target_(target),
      shards_(shards),
      overlap_(overlap),
      skip_(std::move(skip)) {
  PX_CHECK(target != GradTarget::Owners || shards_.dp == dp_.size(),
           "gradient shards are laid out for dp {} but the group has {} ranks", shards_.dp,
           dp_.size());
}

void GradReducer::arm() {
  PX_CHECK(in_flight_.empty() && next_ == 0, "gradient reducer armed twice in one step");
  armed_ = true;
}

void GradReducer::on_segment_ready(int segment) {
  if (!armed_ || !overlap_) return;
  while (next_ < buckets_.size() && buckets_[next_].ready_after <= segment)
    launch(buckets_[next_++]);
}

void GradReducer::launch(const GradBucket& b) {
  int64_t at = b.begin;
  for (const auto& [lo, hi] : skip_) {
    if (hi <= at || lo >= b.end) continue;
    if (lo > at) launch_range(at, lo);
    at = std::max(at, hi);
  }
  if (at < b.end) launch_range(at, b.end);
}

void GradReducer::launch_range(int64_t begin, int64_t end) {
  const GradBucket b{begin, end, 0};
  const size_t n = static_cast<size_t>(b.end - b.begin);
  float* p = grads_ + b.begin;
  switch (target_) {
    case GradTarget::AllRanks:
      in_flight_.push_back(dp_.all_reduce_async(p, p, n, DType::F32, comm::ReduceOp::Sum));
      break;
    case GradTarget::Root:
      in_flight_.push_back(dp_.reduce_async(p, p, n, DType::F32, comm::ReduceOp::Sum, 0));
      break;
    case GradTarget::Owners:
      // Each owner's part of the bucket is reduced to it; the other ranks'
      // copies of that part are left stale and never read.
      for (int r = 0; r < shards_.dp; ++r) {
        const int64_t lo = std::max(b.begin, shards_.begin(r));
        const int64_t hi = std::min(b.end, shards_.end(r));
        if (hi <= lo) continue;
        in_flight_.push_back(dp_.reduce_async(grads_ + lo, grads_ + lo,
                                              static_cast<size_t>(hi - lo), DType::F32,
                                              comm::ReduceOp::Sum, r));
      }
      break;
  }
}

void GradReducer::finish() {
  PX_CHECK(armed_, "gradient reducer finished without being armed");
  while (next_ < buckets_.size()) launch(buckets_[next_++]);
  for (auto& w : in_flight_) w.wait();
  in_flight_.clear();
  next_ = 0;
  armed_ = false;
}

}  // namespace parallm
