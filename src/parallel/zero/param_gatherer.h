// ZeRO-3 parameters: this rank keeps only the values of the flat range it
// owns (ceil(N / dp) elements, tag parameter). Before a unit runs its values
// are gathered from their owners (one broadcast per owner the unit touches)
// into a unit buffer (tag communication) and the model's pointers rebound
// there; the next unit's gather is started at the same time so it overlaps
// this unit's compute. A unit still resident is not gathered again (the
// tail between forward and backward, the last block before the tail). The
// embedding stays in its pinned buffer for the whole step: a tied LM head
// reads it at the start of backward. invalidate() after the optimizer step.
#pragma once
#include <vector>

#include "model/transformer.h"
#include "parallel/data/shard_layout.h"
#include "parallel/zero/unit_staging.h"

namespace parallm {

class ParamGatherer {
 public:
  // Takes this rank's shard from the model's flat values (identical on every
  // rank) and releases the flat value buffer.
  ParamGatherer(comm::Communicator& dp, Transformer& model, ShardLayout shards, Allocator& alloc);
  // Segment s gathered and bound; starts gathering `next` (-1: none).
  void acquire(int segment, int next);
  // The shard changed: wait for gathers in flight and forget every unit.
  void invalidate();
  // shard()[k]: value of flat element shards.begin(rank) + k.
  float* shard() const { return shard_.data<float>(); }
  // Collective: the full flat parameter vector on every rank.
  std::vector<float> full_values();
  int64_t buffer_bytes() const { return slots_.bytes(); }
  // `parallm verify`'s planted bug (nn/verify_hooks.h): segment's gathers
  // place their first owner's piece one element late (-1: never).
  void set_fault_segment(int segment) { fault_segment_ = segment; }

 private:
  void start_gather(UnitSlot& s, int segment);

  comm::Communicator& dp_;
  ParameterSet& params_;
  ShardLayout shards_;
  Tensor shard_;
  UnitSlots slots_;
  UnitSlot* current_ = nullptr;
  int fault_segment_ = -1;
};

}  // namespace parallm
