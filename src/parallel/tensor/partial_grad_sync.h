// Sums over the tp group the gradients of replicated parameters whose
// gradient each rank computes from its own sequence slice (ParamSpec::
// tp_partial_grad: norms, row-parallel biases and positions under sequence
// parallelism). Around each unit's backward: before it, the accumulated
// gradient is set aside and zeroed; after it, this micro-batch's partial
// gradients are all-reduced in one call and the set-aside part added back,
// so gradient accumulation over micro-batches never sums a total twice.
#pragma once
#include <vector>

#include "model/parameters.h"
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
  std::vector<std::vector<int>> params_;  // per unit: its tp_partial_grad parameters
  TpGroup tp_;
  Tensor buffer_;  // [set-aside | reduced] of the largest unit (tag communication)
  int64_t half_ = 0;
};

}  // namespace parallm
