// Holds a layout's training run against the one-process run, the way every
// layout-invariance test does, within the bounds docs/testing.md derives
// (train/verify/trajectory_bounds.h): per step the loss and the gradient
// norm; after the last step each tensor norm-wise, and each element within
// the bound the optimizer allows (for Adam the largest difference two Adam
// runs can have, 2 sum lr_t B_t: an element whose gradient nearly cancels
// may take any step of that size). Prints one line per comparison with the
// worst measured / bound ratio of each kind, so the margins show in the log.
// Tensors may hold padded vocabulary rows past the reference's size; those
// are not compared. `names_from_got`: compare the names `got` holds (a
// pipeline stage holds a subset) instead of every name of `ref`.
#pragma once
#include <fmt/core.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "model/config.h"
#include "train/config/train_config.h"
#include "train/verify/trajectory_bounds.h"

namespace parallm::testing {

using NamedParams = std::map<std::string, std::vector<float>>;

struct Trajectory {
  std::vector<double> losses, grad_norms;
  NamedParams params;
};

// The arithmetic of a run (train/verify/trajectory_bounds.h) with ref as
// its one-process run. trainable: the elements the optimizer updates.
inline RunArithmetic run_arithmetic(const TrainConfig& t, const ModelConfig& m,
                                    const Trajectory& ref, int64_t trainable) {
  return parallm::run_arithmetic(t, m, ref.losses, ref.grad_norms, trainable);
}

// A test's run result (losses, grad_norms, params by name) as a Trajectory.
template <class Result>
Trajectory trajectory_of(const Result& r) {
  return {r.losses, r.grad_norms, r.params};
}

inline int64_t element_count(const NamedParams& p) {
  int64_t n = 0;
  for (const auto& [name, v] : p) n += static_cast<int64_t>(v.size());
  return n;
}

namespace detail {
struct Worst {
  double ratio = 0;
  std::string at;
  void see(double r, const std::string& where) {
    if (!(r <= ratio)) ratio = r, at = where;  // NaN wins
  }
};
}  // namespace detail

// Per-step scalars (loss, gradient norm) against their bounds; keeps the worst ratio.
// floor: an absolute difference that always passes (for a quantity that
// may be exactly zero, like a balancing loss without tokens).
inline void expect_steps_match(const std::vector<double>& ref, const std::vector<double>& got,
                               const std::vector<double>& bound, const std::string& what,
                               const char* quantity, detail::Worst& worst, double floor = 0) {
  ASSERT_EQ(got.size(), ref.size()) << what << ": " << quantity << " steps";
  for (size_t s = 0; s < ref.size(); ++s) {
    const double diff = std::abs(got[s] - ref[s]);
    const double rel = diff <= floor ? 0.0 : diff / std::abs(ref[s]);
    worst.see(rel / bound[s], fmt::format("step {}", s));
    EXPECT_LE(rel, bound[s]) << what << ", step " << s << ": " << quantity << " " << got[s]
                             << " vs " << ref[s] << " (relative " << rel << ", bound " << bound[s]
                             << ")";
  }
}

inline void expect_params_within(const TrajectoryBounds& b, const NamedParams& ref,
                                 const NamedParams& got, const std::string& what,
                                 bool names_from_got, detail::Worst& tensor_worst,
                                 detail::Worst& element_worst) {
  const NamedParams& names = names_from_got ? got : ref;
  ASSERT_FALSE(names.empty()) << what;
  for (const auto& [name, unused] : names) {
    auto r = ref.find(name);
    auto g = got.find(name);
    ASSERT_TRUE(r != ref.end() && g != got.end()) << what << ": parameter " << name;
    ASSERT_GE(g->second.size(), r->second.size()) << what << ": " << name;
    const TensorDistance d = tensor_distance(r->second.data(), g->second.data(), r->second.size());
    const double bound = b.tensor(d.ref_norm, static_cast<int64_t>(r->second.size()));
    tensor_worst.see(d.rel / bound, name);
    EXPECT_LE(d.rel, bound) << what << ": " << name << ": relative distance " << d.rel << ", bound "
                            << bound;
    element_worst.see(d.worst / b.element, name);
    EXPECT_LE(d.worst, b.element) << what << ": " << name << ": element " << d.worst_at << " "
                                  << g->second[d.worst_at] << " vs " << r->second[d.worst_at]
                                  << " (bound " << b.element << ")";
  }
}

// The whole comparison of a layout's run (got) with the one-process run
// (ref); returns the bounds, for the caller's further comparisons.
inline TrajectoryBounds expect_same_trajectory(const RunArithmetic& run, const Trajectory& ref,
                                               const Trajectory& got, const std::string& what,
                                               bool names_from_got = false) {
  const TrajectoryBounds b = trajectory_bounds(run);
  detail::Worst loss, gnorm, tensor, element;
  expect_steps_match(ref.losses, got.losses, b.loss, what, "loss", loss);
  if (!got.grad_norms.empty())
    expect_steps_match(ref.grad_norms, got.grad_norms, b.grad_norm, what, "grad norm", gnorm);
  expect_params_within(b, ref.params, got.params, what, names_from_got, tensor, element);
  fmt::print(
      "[trajectory] {}: measured/bound worst: loss {:.3g} ({}), grad norm {:.3g} ({}), "
      "tensor {:.3g} ({}), element {:.3g} ({}); rho {:.3g}, last loss bound {:.3g}, last grad "
      "norm bound {:.3g}\n",
      what, loss.ratio, loss.at, gnorm.ratio, gnorm.at, tensor.ratio, tensor.at, element.ratio,
      element.at, b.rho, b.loss.back(), b.grad_norm.back());
  return b;
}

// The loss of an evaluation after the last step (logging.eval_batches
// micro-batches of the run's shape) against the one-process run's.
// b: the run's bounds (expect_same_trajectory's); the last step's gradient
// norm stands for the one at the end.
inline void expect_eval_loss_match(const TrajectoryBounds& b, const TrainConfig& t,
                                   double last_grad_norm, double ref, double got,
                                   const std::string& what) {
  const int64_t tokens = t.logging.eval_batches * t.training.micro_batch_size * t.training.seq_len;
  const double bound = b.eval_loss(ref, last_grad_norm, tokens);
  EXPECT_LE(std::abs(got - ref), bound * std::abs(ref))
      << what << ": eval loss " << got << " vs " << ref << " (relative bound " << bound << ")";
}

}  // namespace parallm::testing
