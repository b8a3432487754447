// `parallm calibrate`: measures this machine into a device profile for the
// step-time model (docs/planner.md "Calibration"): the kernels' costs at one
// thread and at every core (train/calibrate/kernel_costs.h), the link's
// alpha-beta from an all-reduce sweep on local ranks
// (train/calibrate/link_costs.h), peak GEMM rate and memory; written as the
// JSON `parallm plan --profile` reads. The devices of such a profile are
// ranks sharing the machine's cores.
#pragma once
#include <ostream>
#include <string>

#include "base/child_process.h"

namespace parallm {

struct CalibrateOptions {
  std::string out = "profile.json";
  std::string name;  // empty: "<cpu model>, N cores"
  int cores = 0;     // 0: the cores this process may use
  int devices_per_node = 8;
  int link_ranks = 2;
  std::string mpirun = kLocalMpirun;
  // A launcher that puts the sweep's ranks on different nodes (e.g. the
  // namespace harness with --map-by ppr:1:node): its fit becomes the
  // inter-node link, --mpirun's the intra-node one. Empty: one link for both.
  std::string inter_node_mpirun;
  bool quick = false;  // a small grid and short rounds (tests; not for planning)
};

// Returns 0; errors (a failed benchmark, an unwritable file) throw with a
// message naming what failed.
int run_calibrate(const CalibrateOptions& o, std::ostream& out);

}  // namespace parallm
