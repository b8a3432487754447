// Optimizer: the interface DataParallel updates parameters through. An
// optimizer owns the state of one flat range [begin, end) of a
// ParameterSet (the whole set, or a ZeRO rank's shard) and updates exactly
// that range. Element-wise optimizers (SGD, momentum, Adam, AdamW) work on
// any range; Muon needs whole matrices (optim/muon.h). State is tagged
// MemTag::Optimizer and exposed as named buffers that map each element to a
// flat parameter index, so checkpoints can save and restore it in any layout.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "nn/parameters.h"
#include "optim/optimizer_config.h"
#include "parallel/tensor/tp_group.h"

namespace parallm {

// A flat range of the ParameterSet: elements [begin, end).
struct FlatSpan {
  int64_t begin = 0, end = 0;
  int64_t size() const { return end - begin; }
};

// One named state buffer: its elements, read in order, belong to the flat
// elements of `spans` in order (tensor->numel() may exceed the spans' total:
// ZeRO pads every shard to the same size; the tail is never read).
struct OptimizerState {
  std::string name;  // torch's names: "momentum_buffer", "exp_avg", "exp_avg_sq"
  Tensor* tensor = nullptr;
  std::vector<FlatSpan> spans;
};

class Optimizer {
 public:
  Optimizer(int64_t begin, int64_t end) : begin_(begin), end_(end) {}
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // One update of the owned range with learning rate lr: p[k] and g[k] are
  // the value and gradient of flat element begin() + k (ZeRO-2/3 keep
  // gradients, and under stage 3 values, only as such shards).
  virtual void step_range(const ParameterSet& params, double lr, float* p, const float* g) = 0;
  // The same on the ParameterSet's flat buffers.
  void step(const ParameterSet& params, double lr);

  virtual OptimizerKind kind() const = 0;
  // The state buffers (empty for plain SGD); mutable so a checkpoint can restore them.
  virtual std::vector<OptimizerState> state() = 0;
  // Bytes of state (tag optimizer) this optimizer holds.
  int64_t state_bytes();
  int64_t steps_taken() const { return step_; }
  void set_steps_taken(int64_t s) { step_ = s; }  // checkpoint restore
  int64_t begin() const { return begin_; }
  int64_t end() const { return end_; }

 protected:
  int64_t begin_, end_;
  int64_t step_ = 0;
};

// The optimizer cfg.kind names, for the flat range [begin, end) stored in
// `capacity` elements (Muon stores exactly what it owns). tp: the model's
// tensor-parallel group; shard_group: the group whose ranks own the other
// ranges under ZeRO (null otherwise), rank r owning [r * capacity,
// (r + 1) * capacity). Muon assembles whole matrices over
// both; the element-wise optimizers ignore them.
std::unique_ptr<Optimizer> make_optimizer(const OptimizerConfig& cfg, const ParameterSet& params,
                                          Allocator& alloc, int64_t begin, int64_t end,
                                          int64_t capacity, const TpGroup& tp = {},
                                          comm::Communicator* shard_group = nullptr);

// Calls f(i, lo, hi) for each parameter i overlapping [begin, end), with
// [lo, hi) the overlap in flat indices (the parameter's padding excluded).
template <class F>
void for_each_param_in(const ParameterSet& params, int64_t begin, int64_t end, F&& f) {
  for (int i = 0; i < params.size(); ++i) {
    const int64_t lo = std::max(begin, params.offset(i));
    const int64_t hi = std::min(end, params.offset(i) + params.numel(i));
    if (lo < hi) f(i, lo, hi);
  }
}

}  // namespace parallm
