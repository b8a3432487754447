#include "optim/span_optimizer.h"

#include "base/error.h"

namespace parallm {
namespace {

int64_t first_begin(const std::vector<FlatSpan>& s) { return s.empty() ? 0 : s.front().begin; }
int64_t last_end(const std::vector<FlatSpan>& s) { return s.empty() ? 0 : s.back().end; }

}  // namespace

SpanOptimizer::SpanOptimizer(const OptimizerConfig& cfg, const ParameterSet& params,
                             Allocator& alloc, std::vector<FlatSpan> spans)
    : Optimizer(first_begin(spans), last_end(spans)), kind_(cfg.kind), spans_(std::move(spans)) {
  PX_CHECK(cfg.kind != OptimizerKind::Muon,
           "optimizer {} needs whole matrices and cannot own scattered spans (ZeRO under expert "
           "parallelism); use an element-wise optimizer",
           optimizer_name(cfg.kind));
  int64_t at = 0;
  for (const FlatSpan& s : spans_) {
    PX_CHECK(s.begin >= at && s.end > s.begin && s.end <= params.total_numel(),
             "optimizer span [{}, {}) is empty, overlaps the previous one or exceeds {} elements",
             s.begin, s.end, params.total_numel());
    at = s.end;
    parts_.push_back(make_optimizer(cfg, params, alloc, s.begin, s.end, s.size()));
  }
}

void SpanOptimizer::step_range(const ParameterSet& params, double lr, float* p, const float* g) {
  for (size_t i = 0; i < parts_.size(); ++i) {
    parts_[i]->set_steps_taken(step_);  // one step count for all (checkpoint restore sets ours)
    const int64_t k = spans_[i].begin - begin_;
    parts_[i]->step_range(params, lr, p + k, g + k);
  }
  ++step_;
}

void SpanOptimizer::step_spans(const ParameterSet& params, double lr, float* values,
                               std::span<const float* const> grads) {
  std::vector<float*> per_span;
  for (const FlatSpan& s : spans_) per_span.push_back(values + s.begin);
  step_spans(params, lr, per_span, grads);
}

void SpanOptimizer::step_spans(const ParameterSet& params, double lr,
                               std::span<float* const> values,
                               std::span<const float* const> grads) {
  PX_CHECK(grads.size() == parts_.size() && values.size() == parts_.size(),
           "{} gradient and {} value spans for {} optimizer spans", grads.size(), values.size(),
           parts_.size());
  for (size_t i = 0; i < parts_.size(); ++i) {
    parts_[i]->set_steps_taken(step_);
    parts_[i]->step_range(params, lr, values[i], grads[i]);
  }
  ++step_;
}

std::vector<OptimizerState> SpanOptimizer::state() {
  std::vector<OptimizerState> out;
  for (auto& part : parts_)
    for (OptimizerState& s : part->state()) out.push_back(std::move(s));
  return out;
}

}  // namespace parallm
