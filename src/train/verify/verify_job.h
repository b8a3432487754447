// `parallm verify` (docs/verify.md): trains the same run on one process and
// on a layout (mpirun), same seed, data and batch geometry, compares losses
// and gradient norms per step and every parameter at the end; when they
// diverge, repeats step 1 on both sides with per-op dumps and names the
// first op (layer, op, rank, max relative difference) where the layout
// leaves the one-process result. Prints a verdict table; optional JSON report.
#pragma once
#include <ostream>
#include <string>
#include <vector>

#include "base/child_process.h"
#include "train/verify/layout_spec.h"

namespace parallm {

struct VerifyOptions {
  std::string config;  // --config RUN (TOML), or
  std::string model;   // --model PRESET
  LayoutSpec layout;
  int64_t steps = 3;
  // One bound for every comparison; 0: the derived bounds (docs/testing.md).
  double tolerance = 0;
  std::string report_path;              // JSON verdict (empty: none)
  std::vector<std::string> train_args;  // more `parallm train` flags, for both runs
  std::string inject_fault;             // the layout run only (verify's own tests)
  std::string mpirun = kLocalMpirun;
  int threads = 1;          // CPU threads per process
  bool keep_files = false;  // keep the temporary directory (its path is printed)
  bool locate = true;       // on divergence, find the first differing op
  // Train with the run's optimizer rather than plain SGD (docs/verify.md:
  // Adam turns fp32 noise in near-zero gradients into full-size updates).
  bool same_optimizer = false;
};

// 0: the layout follows the one-process trajectory; 1: it does not (the
// verdict says where); 2: a run failed (its log's tail is printed).
int run_verify(const VerifyOptions& o, std::ostream& out);

}  // namespace parallm
