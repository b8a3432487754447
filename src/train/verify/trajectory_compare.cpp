#include "train/verify/trajectory_compare.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>

#include "base/error.h"
#include "model/transformer.h"
#include "checkpoint/checkpoint_load.h"
#include "train/verify/trajectory_bounds.h"

namespace parallm {
namespace {
struct StepRecord {
  double loss = 0, grad_norm = 0, lr = 0;
};

std::map<int64_t, StepRecord> read_metrics(const std::string& path) {
  std::ifstream in(path);
  PX_CHECK(in.good(), "verify: the run wrote no metrics file '{}'", path);
  std::map<int64_t, StepRecord> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const auto j = nlohmann::json::parse(line);
    out[j.at("step").get<int64_t>()] = {j.at("loss").get<double>(), j.at("grad_norm").get<double>(),
                                        j.value("lr", 0.0)};
  }
  return out;
}

// The whole one-process model holding the checkpoint's values, by name.
std::map<std::string, std::vector<float>> checkpoint_parameters(const OpenedCheckpoint& ck) {
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

double over(double measured, double bound) {
  if (std::isnan(measured)) return INFINITY;
  return measured == 0 ? 0 : bound > 0 ? measured / bound : INFINITY;
}
}  // namespace

double StepCompare::ratio() const {
  return missing ? INFINITY
                 : std::max(over(loss_rel, loss_bound), over(grad_norm_rel, grad_norm_bound));
}

double ParamCompare::ratio() const {
  return std::max(over(rel, bound), over(element, element_bound));
}

double relative_difference(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return INFINITY;
  const double scale = std::max(std::abs(a), std::abs(b));
  return scale == 0 ? 0 : std::abs(a - b) / scale;
}

TrajectoryCompare compare_trajectories(const std::string& metrics_ref,
                                       const std::string& metrics_layout,
                                       const std::string& checkpoint_ref,
                                       const std::string& checkpoint_layout, int64_t steps,
                                       std::optional<double> tolerance) {
  TrajectoryCompare r;
  const auto ref = read_metrics(metrics_ref), lay = read_metrics(metrics_layout);
  std::vector<double> losses, grad_norms, lrs;
  for (int64_t s = 0; s < steps; ++s) {
    const auto a = ref.find(s);
    PX_CHECK(a != ref.end(), "verify: the one-process run has no metrics for step {}", s);
    losses.push_back(a->second.loss);
    grad_norms.push_back(a->second.grad_norm);
    lrs.push_back(a->second.lr);
  }
  const OpenedCheckpoint ck_ref = open_checkpoint(checkpoint_ref, nullptr);
  const auto pa = checkpoint_parameters(ck_ref);
  const auto pb = checkpoint_parameters(open_checkpoint(checkpoint_layout, nullptr));
  int64_t elements = 0;
  for (const auto& [name, va] : pa) elements += static_cast<int64_t>(va.size());

  // The derived bounds need the run's settings, which the checkpoint records.
  TrajectoryBounds b;
  if (!tolerance) {
    PX_CHECK(ck_ref.state.run.has_value(),
             "verify: the one-process checkpoint '{}' does not record its run's settings, which "
             "the derived bounds need; give --tolerance",
             checkpoint_ref);
    const TrainConfig& train = ck_ref.state.run->train;
    PX_CHECK(train.precision.matmul == Precision::FP32,
             "verify: the derived bounds are for fp32 runs (sums reordered at 2^-24), this run "
             "uses {} GEMMs; give --tolerance",
             train.precision.matmul == Precision::BF16 ? "bf16" : "fp16");
    RunArithmetic a = run_arithmetic(train, ck_ref.state.model, losses, grad_norms, elements);
    a.lrs = lrs;  // as the run logged them
    b = trajectory_bounds(a);
  } else {
    b.rho = *tolerance;
    b.loss.assign(steps, *tolerance);
    b.grad_norm.assign(steps, *tolerance);
    b.element = INFINITY;
  }
  r.op_tolerance = b.rho;
  for (int64_t s = 0; s < steps; ++s) {
    StepCompare c;
    c.step = s;
    c.loss_ref = losses[s];
    c.grad_norm_ref = grad_norms[s];
    c.loss_bound = b.loss[s];
    c.grad_norm_bound = b.grad_norm[s];
    const auto it = lay.find(s);
    c.missing = it == lay.end();
    if (!c.missing) {
      c.loss_layout = it->second.loss;
      c.grad_norm_layout = it->second.grad_norm;
      c.loss_rel = relative_difference(c.loss_ref, c.loss_layout);
      c.grad_norm_rel = relative_difference(c.grad_norm_ref, c.grad_norm_layout);
    }
    r.worst_ratio = std::max(r.worst_ratio, c.ratio());
    if (!(c.ratio() <= 1) && r.first_bad_step < 0) r.first_bad_step = static_cast<int>(s);
    r.steps.push_back(c);
  }
  for (const auto& [name, va] : pa) {
    const auto it = pb.find(name);
    PX_CHECK(it != pb.end() && it->second.size() == va.size(),
             "verify: the layout's checkpoint has no parameter '{}' of {} elements", name,
             va.size());
    const TensorDistance d = tensor_distance(va.data(), it->second.data(), va.size());
    ParamCompare p{name};
    p.rel = d.rel;
    p.bound = tolerance ? *tolerance : b.tensor(d.ref_norm, static_cast<int64_t>(va.size()));
    p.element = d.worst;
    p.element_bound = b.element;
    if (!(p.ratio() <= 1)) ++r.params_over;
    r.worst_ratio = std::max(r.worst_ratio, p.ratio());
    r.params.push_back(p);
  }
  std::stable_sort(
      r.params.begin(), r.params.end(),
      [](const ParamCompare& x, const ParamCompare& y) { return x.ratio() > y.ratio(); });
  r.ok = r.first_bad_step < 0 && r.params_over == 0;
  return r;
}

}  // namespace parallm
