// How far two runs of one training may drift apart when they differ only in
// the order of their floating-point sums: a layout against one process, or
// one CPU's GEMM blocking against another's. Every layout test and
// `parallm verify` hold their runs to these bounds; docs/testing.md derives
// them. In short: a reordered sum of n terms differs by about lambda sqrt(n)
// u of its terms' size (u = 2^-24; rounding errors independent, Higham and
// Mary 2019), so one step's gradient differs by rho = 2 lambda sqrt(n) u
// norm-wise; the optimizer turns that into an update difference (Adam: at
// most (1 + B_t) rho per element of its normalised step, where B_t bounds
// |m|/sqrt(v); SGD: lr rho |g|); differences accumulate over the steps; a
// later loss or gradient norm sees the parameters' difference through the
// gradient (loss) or the Gauss-Newton curvature (gradient norm). The loss,
// a mean over M tokens whose errors are independent, carries rho / sqrt(M)
// of its own.
#pragma once
#include <cstdint>
#include <vector>

#include "model/config.h"
#include "optim/optimizer_config.h"
#include "train/config/train_config.h"

namespace parallm {

// What the bounds depend on, read off the run and its one-process reference.
struct RunArithmetic {
  // n: the longest sum a layout may reorder: the tokens of a step (weight
  // gradients), the vocabulary (log-sum-exp) or the widest layer.
  int64_t longest_sum = 1;
  int64_t tokens = 1;      // M: tokens of a step (the loss is their mean)
  int64_t parameters = 1;  // N: elements the optimizer updates
  OptimizerConfig optimizer;
  double clip_grad = 0;  // global-norm clip (0: off)
  // Per step: the learning rate, and the one-process run's loss and
  // gradient norm (before clipping).
  std::vector<double> lrs, losses, grad_norms;
};

// The arithmetic of an fp32 run configured by t on model m, with the one-process
// run's losses and gradient norms; trainable: the elements the optimizer
// updates (the whole model, or LoRA's adapters).
RunArithmetic run_arithmetic(const TrainConfig& t, const ModelConfig& m,
                             const std::vector<double>& losses,
                             const std::vector<double>& grad_norms, int64_t trainable);

struct TrajectoryBounds {
  double rho = 0;  // relative (norm-wise) difference of one step's gradient
  // Per step: |layout - one| / |one| for the loss and the gradient norm.
  std::vector<double> loss, grad_norm;
  // After the last step, a tensor P of count elements: ||dP|| <= per_element
  // sqrt(count) + absolute (the one that applies to the optimizer is nonzero).
  double per_element = 0, absolute = 0;
  // After the last step, any one element: |dp| <= element (infinite where
  // no bound is known: Muon's orthogonalised matrices). For Adam it is the
  // largest difference two runs of Adam can have at all (2 sum lr_t B_t),
  // whatever their gradients: near-zero gradients make it reachable.
  double element = 0;
  double drift = 0;  // ||layout - one|| of the whole model after the last step

  // ||layout - one|| / ||one|| allowed for a tensor of `count` elements
  // whose one-process values have norm ref_norm.
  double tensor(double ref_norm, int64_t count) const;
  // A loss evaluated after the last step over `tokens` tokens (relative),
  // with the last step's gradient norm standing for the one at the end.
  double eval_loss(double loss, double grad_norm, int64_t tokens) const;
};

// lambda of the probabilistic bound: a sum of n <= 10^4 terms stays within
// lambda sqrt(n) u of its terms' size with probability 1 - 2n exp(-lambda^2/2)
// > 1 - 10^-4 (docs/testing.md).
inline constexpr double kReassociationLambda = 6.0;
inline constexpr double kF32Unit = 0x1p-24;

// B_t: the largest |m_hat| / sqrt(v_hat) Adam can reach at step t (1-based)
// for any gradients (Cauchy-Schwarz over the moving averages).
double adam_ratio_bound(double beta1, double beta2, int64_t t);

// Two runs' values of one tensor: ||got - ref|| / ||ref|| (0 when equal,
// even for an all-zero ref), ||ref||, and the largest |got - ref| of one
// element (NaN anywhere: infinite) and where. Only ref's n elements count.
struct TensorDistance {
  double rel = 0, ref_norm = 0, worst = 0;
  size_t worst_at = 0;
};
TensorDistance tensor_distance(const float* ref, const float* got, size_t n);

// Bounds for a run of grad_norms.size() steps (lrs and losses as many).
TrajectoryBounds trajectory_bounds(const RunArithmetic& run);

}  // namespace parallm
