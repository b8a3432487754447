// ZeRO's shards under expert parallelism (docs/moe.md). Dense parameters are
// replicated over dp, expert parameters only over expert-dp (the ep ranks
// inside dp hold different experts), so each kind is sharded over the group
// that replicates it: a rank owns the dense elements of its dp shard (the
// usual ShardLayout over the flat buffer, expert ranges cut out) and its
// expert-dp shard of the expert elements (a ShardLayout over the expert
// ranges laid end to end). Invariant: over a dp group every dense element
// has one owner, over an expert-dp group every expert element has one.
#pragma once
#include <utility>
#include <vector>

#include "comm/communicator.h"
#include "optim/optimizer.h"
#include "parallel/data/shard_layout.h"
#include "parallel/zero/span_owners.h"

namespace parallm {

class ExpertShards {
 public:
  // dense: the dp layout of the whole flat buffer; expert_ranges: sorted,
  // disjoint flat ranges of expert parameters; edp: expert-dp group size.
  ExpertShards(ShardLayout dense, std::vector<std::pair<int64_t, int64_t>> expert_ranges, int edp);
  std::vector<FlatSpan> dense_spans(int dp_rank) const;
  std::vector<FlatSpan> expert_spans(int edp_rank) const;
  // Both, sorted by position: what this rank's optimizer owns.
  std::vector<FlatSpan> owned(int dp_rank, int edp_rank) const;
  // The ownership tables of ZeRO-2/3 (span_owners.h): dense spans over dp,
  // expert spans over edp (null: size 1).
  std::vector<SpanOwners> owner_tables(comm::Communicator& dp, comm::Communicator* edp) const;
  // Collective over dp and edp (null or size 1: none): every owner's fresh
  // values of the flat buffer `values` reach the ranks that replicate them.
  void sync(comm::Communicator& dp, comm::Communicator* edp, float* values) const;

 private:
  ShardLayout dense_;
  std::vector<std::pair<int64_t, int64_t>> experts_;
  ShardLayout expert_layout_;  // over the expert elements laid end to end
};

}  // namespace parallm
