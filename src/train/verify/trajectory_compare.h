// The first half of `parallm verify`: two runs of the same training (one
// process, and a layout) compared step by step (the metrics' loss and
// grad_norm) and, at the end, parameter by parameter (both final
// checkpoints loaded into one whole one-process model; checkpoints load into
// any layout). Differences are relative: |a - b| / max|reference|, so a
// tensor's tiny entries do not dominate; for parameters the scale is at
// least 1% of the model's largest value (tolerance: docs/verify.md).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace parallm {

struct StepCompare {
  int64_t step = 0;
  double loss_ref = 0, loss_layout = 0, loss_rel = 0;
  double grad_norm_ref = 0, grad_norm_layout = 0, grad_norm_rel = 0;
  bool missing = false;  // the layout wrote no record of this step
};

struct ParamCompare {
  std::string name;
  double rel = 0;  // max |a - b| / max(max |reference|, 1% of the model's max |value|)
};

struct TrajectoryCompare {
  std::vector<StepCompare> steps;
  std::vector<ParamCompare> params;  // every parameter, worst first
  int params_over = 0;               // over the tolerance
  int first_bad_step = -1;           // -1: every step within the tolerance
  bool ok = false;
};

// rel of two scalars: |a - b| / max(|a|, |b|) (0 when both are 0).
double relative_difference(double a, double b);

// metrics_*: the runs' JSONL files; checkpoint_*: their --save directories.
TrajectoryCompare compare_trajectories(const std::string& metrics_ref,
                                       const std::string& metrics_layout,
                                       const std::string& checkpoint_ref,
                                       const std::string& checkpoint_layout, int64_t steps,
                                       double tolerance);

}  // namespace parallm
