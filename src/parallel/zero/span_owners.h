// Who owns which flat elements under ZeRO-2/3, as tables, one per group:
// plain ZeRO has one (dp rank r owns its ShardLayout range), under expert
// parallelism dense elements are owned over dp and expert elements over
// expert-dp (expert_shards.h). A rank keeps what it owns of all tables
// packed in one buffer, spans in flat order: the gradient shard
// (grad_shard_reducer.h) and the ZeRO-3 value shard (param_gatherer.h) use
// the same packing, so span i sits at the same offset in both.
#pragma once
#include <vector>

#include "comm/communicator.h"
#include "optim/optimizer.h"
#include "parallel/data/shard_layout.h"

namespace parallm {

// spans[r]: what rank r of `group` owns, sorted, disjoint. A null or size-1
// group: this rank owns spans[0] alone (nothing to communicate).
struct SpanOwners {
  comm::Communicator* group = nullptr;
  std::vector<std::vector<FlatSpan>> spans;
  int rank() const { return group ? group->rank() : 0; }
  int size() const { return group ? group->size() : 1; }
  bool shared() const { return size() > 1; }
};

// Plain ZeRO's one table: dp rank r owns [shards.begin(r), shards.end(r)).
std::vector<SpanOwners> plain_owners(comm::Communicator& dp, ShardLayout shards);

// This rank's spans of all tables in flat order; spans[i]'s elements start
// at offsets[i] of the packed buffer, numel in all.
struct PackedSpans {
  std::vector<FlatSpan> spans;
  std::vector<int64_t> offsets;
  int64_t numel = 0;
  // Offset in the packed buffer of flat element `flat`, which must be owned.
  int64_t offset_of(int64_t flat) const;
};
PackedSpans pack_owned(const std::vector<SpanOwners>& owners);

}  // namespace parallm
