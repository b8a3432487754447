#include "train/verify/trajectory_compare.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>

#include "base/error.h"
#include "model/transformer.h"
#include "train/checkpoint_load.h"

namespace parallm {
namespace {
struct StepRecord {
  double loss = 0, grad_norm = 0;
};

std::map<int64_t, StepRecord> read_metrics(const std::string& path) {
  std::ifstream in(path);
  PX_CHECK(in.good(), "verify: the run wrote no metrics file '{}'", path);
  std::map<int64_t, StepRecord> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const auto j = nlohmann::json::parse(line);
    out[j.at("step").get<int64_t>()] = {j.at("loss").get<double>(),
                                        j.at("grad_norm").get<double>()};
  }
  return out;
}

// The whole one-process model holding the checkpoint's values, by name.
std::map<std::string, std::vector<float>> checkpoint_parameters(const std::string& dir) {
  OpenedCheckpoint ck = open_checkpoint(dir, nullptr);
  Allocator alloc;
  ModelConfig mc = ck.state.model;
  Transformer model(mc, alloc);
  const ParameterSet& ps = model.params();
  load_checkpoint_values(ck, ps, mc.vocab_size);
  std::map<std::string, std::vector<float>> out;
  for (int i = 0; i < ps.size(); ++i) {
    const float* v = ps.value(ParamRef{i});
    out[ps.spec(i).name].assign(v, v + ps.numel(i));
  }
  return out;
}
}  // namespace

double relative_difference(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return INFINITY;
  const double scale = std::max(std::abs(a), std::abs(b));
  return scale == 0 ? 0 : std::abs(a - b) / scale;
}

TrajectoryCompare compare_trajectories(const std::string& metrics_ref,
                                       const std::string& metrics_layout,
                                       const std::string& checkpoint_ref,
                                       const std::string& checkpoint_layout, int64_t steps,
                                       double tolerance) {
  TrajectoryCompare r;
  const auto ref = read_metrics(metrics_ref), lay = read_metrics(metrics_layout);
  for (int64_t s = 0; s < steps; ++s) {
    StepCompare c;
    c.step = s;
    const auto a = ref.find(s), b = lay.find(s);
    PX_CHECK(a != ref.end(), "verify: the one-process run has no metrics for step {}", s);
    c.loss_ref = a->second.loss;
    c.grad_norm_ref = a->second.grad_norm;
    c.missing = b == lay.end();
    if (!c.missing) {
      c.loss_layout = b->second.loss;
      c.grad_norm_layout = b->second.grad_norm;
      c.loss_rel = relative_difference(c.loss_ref, c.loss_layout);
      c.grad_norm_rel = relative_difference(c.grad_norm_ref, c.grad_norm_layout);
    }
    const bool bad = c.missing || !(c.loss_rel <= tolerance) || !(c.grad_norm_rel <= tolerance);
    if (bad && r.first_bad_step < 0) r.first_bad_step = static_cast<int>(s);
    r.steps.push_back(c);
  }
  const auto pa = checkpoint_parameters(checkpoint_ref);
  const auto pb = checkpoint_parameters(checkpoint_layout);
  // A tensor that stays near zero (a bias whose gradient is zero in exact
  // arithmetic: softmax ignores GPT-2's key bias) is measured against
  // kFloor of the model's largest parameter, not against its own noise.
  constexpr double kFloor = 1e-2;
  double model_max = 0;
  for (const auto& [name, va] : pa)
    for (float v : va) model_max = std::max(model_max, std::abs(static_cast<double>(v)));
  for (const auto& [name, va] : pa) {
    const auto it = pb.find(name);
    PX_CHECK(it != pb.end() && it->second.size() == va.size(),
             "verify: the layout's checkpoint has no parameter '{}' of {} elements", name,
             va.size());
    double diff = 0, scale = kFloor * model_max;
    for (size_t i = 0; i < va.size(); ++i) {
      const double e = std::abs(static_cast<double>(it->second[i]) - va[i]);
      diff = std::isnan(e) ? INFINITY : std::max(diff, e);
      scale = std::max(scale, std::abs(static_cast<double>(va[i])));
    }
    ParamCompare p{name, diff == 0 ? 0 : scale == 0 ? INFINITY : diff / scale};
    if (!(p.rel <= tolerance)) ++r.params_over;
    r.params.push_back(p);
  }
  std::stable_sort(r.params.begin(), r.params.end(),
                   [](const ParamCompare& x, const ParamCompare& y) { return x.rel > y.rel; });
  r.ok = r.first_bad_step < 0 && r.params_over == 0;
  return r;
}

}  // namespace parallm
