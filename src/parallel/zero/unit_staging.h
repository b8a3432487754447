// Unit buffers for ZeRO-2/3: a few buffers, each sized for the largest unit
// (one model grad segment: embedding, a block, or the tail), that a
// unit's gathered values or its gradients live in while the unit runs, with
// the collectives still in flight on them. Invariant: a slot is reused only
// after its pending work completed, so at most kSlots units are resident:
// two rotating slots (the unit computing and the one prefetched or still
// reducing) plus one pinned slot for the embedding, which a tied LM head
// needs at both ends of the step. All tagged communication memory.
#pragma once
#include <vector>

#include "comm/communicator.h"
#include "model/contract/model_contract.h"

namespace parallm {

struct UnitSlot {
  Tensor buf;
  int segment = -1;               // resident unit, -1 for none
  std::vector<comm::Work> works;  // collectives in flight on buf
  int64_t stamp = 0;              // when it was last picked
  bool reduced = false;           // ZeRO-2/3: its gradients went to their owners, not yet added
  float* data() const { return buf.data<float>(); }
};

class UnitSlots {
 public:
  // segments: the model's grad_segments(); the last one (the embedding) is pinned.
  UnitSlots(const std::vector<GradSegment>& segments, Allocator& alloc);
  int pinned_segment() const { return static_cast<int>(segs_.size()) - 1; }
  UnitSlot& pinned() { return slots_[2]; }
  UnitSlot& rotating(int i) { return slots_[i]; }
  // The slot holding segment s, or null.
  UnitSlot* find(int s);
  // The slot segment s should go to, avoiding `busy` (the rotating slot of
  // the unit in use); the embedding always goes to the pinned slot.
  UnitSlot& pick(int s, const UnitSlot* busy);
  std::vector<UnitSlot>& all() { return slots_; }
  const GradSegment& segment(int s) const { return segs_[s]; }
  int64_t bytes() const;

 private:
  std::vector<GradSegment> segs_;
  std::vector<UnitSlot> slots_;
  int64_t clock_ = 0;
};

}  // namespace parallm
