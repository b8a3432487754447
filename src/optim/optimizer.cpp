#include "optim/optimizer.h"

#include "base/error.h"
#include "optim/adam.h"
#include "optim/muon.h"
#include "optim/sgd.h"

namespace parallm {

void Optimizer::step(const ParameterSet& params, double lr) {
  step_range(params, lr, params.flat_values().data<float>() + begin_,
             params.flat_grads().data<float>() + begin_);
}

int64_t Optimizer::state_bytes() {
  int64_t b = 0;
  for (const OptimizerState& s : state()) b += static_cast<int64_t>(s.tensor->nbytes());
  return b;
}

std::unique_ptr<Optimizer> make_optimizer(const OptimizerConfig& cfg, const ParameterSet& params,
                                          Allocator& alloc, int64_t begin, int64_t end,
                                          int64_t capacity, const TpGroup& tp,
                                          comm::Communicator* shard_group) {
  cfg.validate();
  switch (cfg.kind) {
    case OptimizerKind::SGD:
    case OptimizerKind::SGDMomentum:
      return std::make_unique<Sgd>(params, cfg, alloc, begin, end, capacity);
    case OptimizerKind::Adam:
    case OptimizerKind::AdamW:
      return std::make_unique<Adam>(params, cfg, alloc, begin, end, capacity);
    case OptimizerKind::Muon:
      return std::make_unique<Muon>(params, cfg, alloc, begin, end, tp, shard_group, capacity);
  }
  PX_FAIL("unknown optimizer kind {}", static_cast<int>(cfg.kind));
}

}  // namespace parallm
