#include "optim/nonfinite.h"

#include <cmath>

namespace parallm {

namespace {
bool any_nonfinite(const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    if (!std::isfinite(x[i])) return true;
  return false;
}
}  // namespace

int64_t first_nonfinite_grad(const TrainableModel& model, const float* g, int64_t begin, int64_t end) {
  const ParameterSet& ps = model.params();
  int64_t key = 0;
  for (const auto& seg : model.grad_segments()) {
    for (int p = seg.first_param; p < seg.end_param; ++p, ++key) {
      const int64_t lo = std::max(begin, ps.offset(p)),
                    hi = std::min(end, ps.offset(p) + ps.numel(p));
      if (lo < hi && any_nonfinite(g + (lo - begin), hi - lo)) return key;
    }
  }
  return kNoNonfinite;
}

int64_t first_nonfinite_value(const ParameterSet& ps) {
  if (!ps.flat_values().defined()) return kNoNonfinite;
  const float* v = ps.flat_values().data<float>();
  for (int p = 0; p < ps.size(); ++p)
    if (any_nonfinite(v + ps.offset(p), ps.numel(p))) return p;
  return kNoNonfinite;
}

std::string grad_order_name(const TrainableModel& model, int64_t key) {
  int64_t k = 0;
  for (const auto& seg : model.grad_segments())
    for (int p = seg.first_param; p < seg.end_param; ++p, ++k)
      if (k == key) return model.params().spec(p).name;
  return "?";
}

}  // namespace parallm
