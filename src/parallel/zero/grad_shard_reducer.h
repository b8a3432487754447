// ZeRO-2/3 gradients: this rank keeps only the gradient of the flat range it
// owns (ceil(N / dp) elements, tag gradient). During backward each unit's
// gradients are written into a unit staging buffer (tag communication);
// when the unit completes, each owner's part is reduced to it
// asynchronously, and once that finishes the owner adds the part into its
// shard. Every micro-batch is reduced (holding unreduced gradients of all
// units across micro-batches would need the full 4N bytes again); the sum
// over ranks then over micro-batches equals the one-process gradient up to
// fp32 summation order. Without overlap each reduction is waited at once.
#pragma once
#include <memory>

#include "model/transformer.h"
#include "parallel/data/shard_layout.h"
#include "parallel/zero/unit_staging.h"

namespace parallm {

class GradShardReducer {
 public:
  // Rebinds the model's gradients to staging and releases its flat gradient buffer.
  GradShardReducer(comm::Communicator& dp, Transformer& model, ShardLayout shards, bool overlap,
                   Allocator& alloc);
  // Before segment s's backward: bind its gradients to a zeroed buffer.
  // The tail's (segment 0) backward must also prepare the embedding's.
  void prepare(int segment);
  // Segment s's gradients are complete: reduce them to their owners.
  void on_segment_ready(int segment);
  // Waits for every reduction, adding into the shard.
  void finish();
  // shard()[k]: gradient of flat element shards.begin(rank) + k.
  float* shard() const { return shard_.data<float>(); }
  void zero_shard() const { shard_.zero_(); }
  int64_t staging_bytes() const { return slots_.bytes(); }

 private:
  void complete(UnitSlot& s);

  comm::Communicator& dp_;
  ParameterSet& params_;
  ShardLayout shards_;
  bool overlap_;
  Tensor shard_;
  UnitSlots slots_;
};

}  // namespace parallm
