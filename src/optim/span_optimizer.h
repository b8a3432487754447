// SpanOptimizer: an element-wise optimizer (SGD, momentum, Adam, AdamW) that
// owns several disjoint flat spans of a ParameterSet instead of one range:
// ZeRO-1 under expert parallelism owns its dp shard of the dense parameters
// and its expert-dp shard of the expert parameters (parallel/zero/
// expert_shards.h), which interleave in the flat buffer (ZeRO-2/3 step
// it from packed gradients, ZeRO-3 from packed values too). One inner optimizer
// per span, all at the same step count, so every element sees exactly the
// update a one-range optimizer would give it. begin()/end() bound the spans;
// step_range's p[k], g[k] are flat element begin() + k (full flat buffers).
#pragma once
#include <memory>
#include <span>
#include <vector>

#include "optim/optimizer.h"

namespace parallm {

class SpanOptimizer : public Optimizer {
 public:
  // spans: sorted, disjoint, non-empty. cfg.kind must be element-wise (not Muon).
  SpanOptimizer(const OptimizerConfig& cfg, const ParameterSet& params, Allocator& alloc,
                std::vector<FlatSpan> spans);
  void step_range(const ParameterSet& params, double lr, float* p, const float* g) override;
  // The same with each span's gradients in its own place (ZeRO-2 keeps only
  // the owned gradients, packed): values is the whole flat buffer,
  // grads[i] the gradients of spans()[i].
  void step_spans(const ParameterSet& params, double lr, float* values,
                  std::span<const float* const> grads);
  // The same with each span's values in its own place too (ZeRO-3 keeps
  // only the owned values, packed): values[i] holds spans()[i].
  void step_spans(const ParameterSet& params, double lr, std::span<float* const> values,
                  std::span<const float* const> grads);
  OptimizerKind kind() const override { return kind_; }
  std::vector<OptimizerState> state() override;
  const std::vector<FlatSpan>& spans() const { return spans_; }

 private:
  OptimizerKind kind_;
  std::vector<FlatSpan> spans_;
  std::vector<std::unique_ptr<Optimizer>> parts_;  // parts_[i] owns spans_[i]
};

}  // namespace parallm
