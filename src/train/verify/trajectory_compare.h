// The first half of `parallm verify`: two runs of the same training (one
// process, and a layout) compared step by step (the metrics' loss and
// grad_norm) and, at the end, parameter by parameter (both final
// checkpoints loaded into one whole one-process model; checkpoints load into
// any layout). The bounds are the ones every layout test uses
// (trajectory_bounds.h, derived in docs/testing.md) for the one-process
// run's settings and measured losses, or one tolerance for everything when
// the user gives --tolerance. Parameters compare per tensor, norm-wise
// (||layout - one|| / ||one||), and per element within the optimizer's bound.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace parallm {

struct StepCompare {
  int64_t step = 0;
  double loss_ref = 0, loss_layout = 0, loss_rel = 0, loss_bound = 0;
  double grad_norm_ref = 0, grad_norm_layout = 0, grad_norm_rel = 0, grad_norm_bound = 0;
  bool missing = false;  // the layout wrote no record of this step
  double ratio() const;  // the larger measured / bound (infinite when missing)
};

struct ParamCompare {
  std::string name;
  double rel = 0, bound = 0;              // norm-wise ||layout - one|| / ||one||
  double element = 0, element_bound = 0;  // largest |layout - one| of one element
  double ratio() const;                   // the larger measured / bound
};

struct TrajectoryCompare {
  std::vector<StepCompare> steps;
  std::vector<ParamCompare> params;  // every parameter, worst ratio first
  int params_over = 0;               // over their bound
  int first_bad_step = -1;           // -1: every step within its bound
  double worst_ratio = 0;            // over everything compared
  double op_tolerance = 0;           // for the ops of one step (rho, or --tolerance)
  bool ok = false;
};

// rel of two scalars: |a - b| / max(|a|, |b|) (0 when both are 0).
double relative_difference(double a, double b);

// metrics_*: the runs' JSONL files; checkpoint_*: their --save directories.
// tolerance: one bound for everything instead of the derived ones.
TrajectoryCompare compare_trajectories(const std::string& metrics_ref,
                                       const std::string& metrics_layout,
                                       const std::string& checkpoint_ref,
                                       const std::string& checkpoint_layout, int64_t steps,
                                       std::optional<double> tolerance);

}  // namespace parallm
