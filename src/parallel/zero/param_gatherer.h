// ZeRO-3 parameters: this rank keeps only the values of the flat elements it
// owns (tag parameter), packed as span_owners.h lays them out: plain ZeRO
// owns ceil(N / dp) elements, under expert parallelism the dense spans of
// its dp shard and its expert-dp shard of the experts (expert_shards.h).
// Before a unit runs its values are gathered from their owners (one
// broadcast per owner's piece of the unit, over the group of that owner's
// table; pieces of a size-1 group are copied, not sent) into a unit buffer
// (tag communication) and the model's pointers rebound there; the next
// unit's gather is started at the same time so it overlaps this unit's
// compute. A unit still resident is not gathered again (the tail between
// forward and backward, the last block before the tail). The embedding
// stays in its pinned buffer for the whole step: a tied LM head reads it at
// the start of backward. invalidate() after the optimizer step.
#pragma once
#include <functional>
#include <vector>

#include "model/contract/model_contract.h"
#include "parallel/data/shard_layout.h"
#include "parallel/zero/span_owners.h"
#include "parallel/zero/unit_staging.h"

namespace parallm {

class ParamGatherer {
 public:
  // Plain ZeRO-3: dp rank r owns `shards`' range r; shard()[k] is flat
  // element shards.begin(rank) + k.
  ParamGatherer(comm::Communicator& dp, TrainableModel& model, ShardLayout shards, Allocator& alloc);
  // Several tables; the shard packs this rank's spans (at least min_shard
  // elements). Both take this rank's values from the model's flat values
  // (identical on the ranks of each table's group) and release them.
  ParamGatherer(std::vector<SpanOwners> owners, TrainableModel& model, Allocator& alloc,
                int64_t min_shard = 1);
  // Segment s gathered and bound; starts gathering `next` (-1: none).
  void acquire(int segment, int next);
  // The shard changed: wait for gathers in flight and forget every unit.
  void invalidate();
  float* shard() const { return shard_.data<float>(); }
  // This rank's spans in flat order; owned()[i]'s values start at shard() + offsets()[i].
  const std::vector<FlatSpan>& owned() const { return mine_.spans; }
  const std::vector<int64_t>& offsets() const { return mine_.offsets; }
  // Collective: this rank's whole flat parameter vector (under expert
  // parallelism: with its own ep rank's experts).
  std::vector<float> full_values();
  int64_t buffer_bytes() const { return slots_.bytes(); }
  // A bug `parallm verify`'s tests may plant (nn/verify_hooks.h): a unit's
  // gathers place their first owner's piece shift(segment) elements late.
  void set_piece_shift(std::function<int64_t(int segment)> shift) {
    piece_shift_ = std::move(shift);
  }

 private:
  void start_gather(UnitSlot& s, int segment);

  std::vector<SpanOwners> owners_;
  ParameterSet& params_;
  PackedSpans mine_;
  Tensor shard_;
  UnitSlots slots_;
  UnitSlot* current_ = nullptr;
  std::function<int64_t(int)> piece_shift_;  // empty outside verify's tests
};

}  // namespace parallm
