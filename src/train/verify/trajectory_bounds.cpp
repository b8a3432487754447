// trajectory_bounds (see trajectory_bounds.h; derivation in docs/testing.md).
#include "train/verify/trajectory_bounds.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "base/error.h"

namespace parallm {

double adam_ratio_bound(double beta1, double beta2, int64_t t) {
  // m_t = (1-b1) sum_k b1^k g_{t-k}, v_t = (1-b2) sum_k b2^k g_{t-k}^2 (k < t);
  // Cauchy-Schwarz with weights b2^k: |m_t| <= (1-b1) sqrt(sum_k (b1^2/b2)^k)
  // sqrt(v_t / (1-b2)); the bias corrections divide by 1-b1^t and 1-b2^t.
  const double q = beta1 * beta1 / beta2;
  double geo = 0, qk = 1;
  for (int64_t k = 0; k < t; ++k, qk *= q) geo += qk;
  return (1 - beta1) / (1 - std::pow(beta1, double(t))) * std::sqrt(geo) *
         std::sqrt((1 - std::pow(beta2, double(t))) / (1 - beta2));
}

double TrajectoryBounds::tensor(double ref_norm, int64_t count) const {
  const double allowed = per_element * std::sqrt(double(count)) + absolute;
  return ref_norm > 0 ? allowed / ref_norm : std::numeric_limits<double>::infinity();
}

double TrajectoryBounds::eval_loss(double loss, double grad_norm, int64_t tokens) const {
  return rho / std::sqrt(double(std::max<int64_t>(tokens, 1))) +
         (loss != 0 ? drift * grad_norm / std::abs(loss) : 0.0);
}

TensorDistance tensor_distance(const float* ref, const float* got, size_t n) {
  TensorDistance t;
  double ss = 0, dd = 0;
  for (size_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(got[i]) - ref[i];
    ss += static_cast<double>(ref[i]) * ref[i];
    dd += d * d;
    if (!(std::abs(d) <= t.worst)) t.worst = std::isnan(d) ? INFINITY : std::abs(d), t.worst_at = i;
  }
  t.ref_norm = std::sqrt(ss);
  t.rel = dd == 0 ? 0 : ss == 0 ? INFINITY : std::sqrt(dd / ss);
  if (std::isnan(dd)) t.rel = INFINITY;
  return t;
}

RunArithmetic run_arithmetic(const TrainConfig& t, const ModelConfig& m,
                             const std::vector<double>& losses,
                             const std::vector<double>& grad_norms, int64_t trainable) {
  RunArithmetic a;
  a.tokens = t.training.global_batch_size * t.training.seq_len;
  a.longest_sum = std::max({a.tokens, m.vocab_size, m.hidden, m.intermediate});
  a.parameters = trainable;
  a.optimizer = t.optimizer;
  a.clip_grad = t.training.clip_grad;
  const LrSchedule schedule = t.schedule();
  for (size_t s = 0; s < grad_norms.size(); ++s) a.lrs.push_back(schedule.at(int64_t(s)));
  a.losses = losses;
  a.grad_norms = grad_norms;
  return a;
}

TrajectoryBounds trajectory_bounds(const RunArithmetic& run) {
  const size_t steps = run.grad_norms.size();
  PX_CHECK(run.losses.size() == steps && run.lrs.size() == steps,
           "trajectory_bounds: {} losses and {} learning rates for {} gradient norms",
           run.losses.size(), run.lrs.size(), steps);
  PX_CHECK(run.longest_sum > 0 && run.tokens > 0 && run.parameters > 0,
           "trajectory_bounds: longest sum {}, tokens {} and parameters {} must be positive",
           run.longest_sum, run.tokens, run.parameters);
  const OptimizerConfig& o = run.optimizer;
  const bool sgd = o.kind == OptimizerKind::SGD || o.kind == OptimizerKind::SGDMomentum;
  const bool muon = o.kind == OptimizerKind::Muon;
  const double mu = o.kind == OptimizerKind::SGDMomentum ? o.momentum : 0.0;
  // Muon's matrices step at muon_lr on the same schedule, its other tensors at lr.
  const double lr_scale = muon ? std::max(1.0, o.muon_lr_ratio()) : 1.0;
  const double sqrt_n_params = std::sqrt(double(run.parameters));

  TrajectoryBounds b;
  // Two runs each round their own sums: twice one run's error.
  b.rho = 2 * kReassociationLambda * std::sqrt(double(run.longest_sum)) * kF32Unit;
  double per_element = 0, absolute = 0, element = 0, momentum = 0;
  for (size_t s = 0; s < steps; ++s) {
    // The drift the parameters carry into step s (whole model, 2-norm).
    const double drift = per_element * sqrt_n_params + absolute;
    const double g = run.grad_norms[s], loss = run.losses[s];
    // Loss: the gradient seen along the drift; gradient norm: the
    // Gauss-Newton curvature |J|^2 with |J| ~ g / |p - y| (docs/testing.md).
    const double p_miss = std::max(1.0 - std::exp(-std::abs(loss)), 1e-3);
    b.loss.push_back(b.rho / std::sqrt(double(run.tokens)) +
                     (loss != 0 ? drift * g / std::abs(loss) : 0.0));
    b.grad_norm.push_back(b.rho + drift * g / (p_miss * p_miss));
    const double lr = run.lrs[s] * lr_scale;
    if (sgd) {
      const double clipped = run.clip_grad > 0 ? std::min(g, run.clip_grad) : g;
      momentum = mu * momentum + clipped;  // |buffer| <= sum mu^k |g|
      const double step_g = o.nesterov ? clipped + mu * momentum : momentum;
      absolute += lr * b.rho * step_g;
    } else {
      const double ratio = adam_ratio_bound(o.beta1, o.beta2, int64_t(s) + 1);
      per_element += lr * (1 + ratio) * b.rho;
      element += 2 * lr * ratio;
    }
  }
  b.per_element = per_element;
  b.absolute = absolute;
  b.drift = per_element * sqrt_n_params + absolute;
  b.element = sgd ? absolute : muon ? std::numeric_limits<double>::infinity() : element;
  return b;
}

}  // namespace parallm
