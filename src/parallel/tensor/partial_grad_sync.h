// Sums over the tp group the gradients that each tp rank computes only in
// part: replicated parameters whose gradient comes from this rank's sequence
// slice (ParamSpec::tp_partial_grad: norms, row-parallel biases and
// positions under sequence parallelism), and shards held by several ranks
// (ParamSpec::tp_replicas: key/value heads when n_kv_heads < tp), whose
// gradient comes from this rank's query heads. Around each unit's backward:
// before it, the accumulated gradient is set aside and zeroed; after it,
// this micro-batch's partial gradients are all-reduced in one call and the
// set-aside part added back, so gradient accumulation over micro-batches
// never sums a total twice.
#pragma once
#include <vector>

#include "nn/parameters.h"
#include "parallel/tensor/tp_group.h"

namespace parallm {

class PartialGradSync {
 public:
  PartialGradSync() = default;
  // units[u]: the parameter range [first, end) of unit u.
  PartialGradSync(const ParameterSet& ps, const std::vector<std::pair<int, int>>& units,
                  const TpGroup& tp, Allocator& alloc);
  bool active() const { return buffer_.defined(); }
  void before_backward(const ParameterSet& ps, int unit);
  void after_backward(const ParameterSet& ps, int unit);

 private:
  // A shard held by `replicas` ranks travels in a zeroed block with one slot
  // per distinct shard, so one all-reduce over tp sums each slot over its
  // holders only: slots() * numel floats, this rank's at slot().
  struct Entry {
    int param = 0;
    int replicas = 1;  // 1: a tp_partial_grad parameter (one slot, all ranks)
  };
  int64_t reduced_numel(const ParameterSet& ps, const Entry& e) const;
  std::vector<std::vector<Entry>> entries_;  // per unit
  TpGroup tp_;
  Tensor buffer_;  // [set-aside (keep_) | reduced] of the largest unit (tag communication)
  int64_t keep_ = 0;
};

}  // namespace parallm
