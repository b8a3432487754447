// ZeRO-2/3 gradients: this rank keeps only the gradients of the flat elements
// it owns (tag gradient), packed in one shard buffer. During backward each
// unit's gradients are written into a unit staging buffer (tag
// communication); when the unit completes, each owner's part is reduced to
// it asynchronously over the group that replicates it, and once that
// finishes the owner adds the part into its shard. Ownership comes as
// tables, one per group (span_owners.h): plain ZeRO has one, under expert
// parallelism dense elements are owned over dp and expert elements over
// expert-dp (expert_shards.h). Every micro-batch is reduced
// (holding unreduced gradients of all units across micro-batches would need
// the full 4N bytes again); the sum over ranks then over micro-batches equals
// the one-process gradient up to fp32 summation order. Without overlap each
// reduction is waited at once.
#pragma once
#include <memory>
#include <vector>

#include "model/contract/model_contract.h"
#include "optim/optimizer.h"
#include "parallel/data/shard_layout.h"
#include "parallel/zero/span_owners.h"
#include "parallel/zero/unit_staging.h"

namespace parallm {

class GradShardReducer {
 public:
  // Plain ZeRO: dp rank r owns shards' range r; the shard has
  // shards.shard_size() elements (shard()[k]: element shards.begin(rank) + k).
  GradShardReducer(comm::Communicator& dp, TrainableModel& model, ShardLayout shards, bool overlap,
                   Allocator& alloc);
  // Several tables (a null or size-1 group: this rank owns its spans
  // alone); the shard packs this rank's spans of all tables in flat order
  // (at least min_shard elements).
  GradShardReducer(std::vector<SpanOwners> owners, TrainableModel& model, bool overlap,
                   Allocator& alloc, int64_t min_shard = 1);
  // Before segment s's backward: bind its gradients to a zeroed buffer.
  // The tail's (segment 0) backward must also prepare the embedding's.
  void prepare(int segment);
  // Segment s's gradients are complete: reduce them to their owners.
  void on_segment_ready(int segment);
  // Waits for every reduction, adding into the shard.
  void finish();
  float* shard() const { return shard_.data<float>(); }
  void zero_shard() const { shard_.zero_(); }
  int64_t staging_bytes() const { return slots_.bytes(); }
  // This rank's spans in flat order; owned()[i]'s gradients start at shard() + offsets()[i].
  const std::vector<FlatSpan>& owned() const { return mine_.spans; }
  const std::vector<int64_t>& offsets() const { return mine_.offsets; }

 private:
  void complete(UnitSlot& s);

  std::vector<SpanOwners> owners_;
  ParameterSet& params_;
  bool overlap_;
  PackedSpans mine_;
  Tensor shard_;
  UnitSlots slots_;
};

}  // namespace parallm
