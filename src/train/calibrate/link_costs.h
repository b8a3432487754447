// `parallm calibrate`'s communication half: runs `parallm bench comm` (ring
// all-reduce, 1 KiB to 64 MiB in steps of 2x) on `ranks` local ranks and fits
// the alpha-beta cost the step-time model uses for a link (plan/link_cost.h):
// t = 2(n-1) alpha + 2(n-1)/n bytes / bandwidth, by least squares on the
// measured times, weighted by 1 / t so small and large messages count alike;
// once over all sizes and once per band of three neighbouring sizes (MPI
// changes protocol with the size, so one pair fits no size well).
#pragma once
#include <ostream>
#include <string>
#include <vector>

#include "base/child_process.h"
#include "plan/device_profile.h"

namespace parallm {

struct LinkCalibration {
  std::string mpirun = kLocalMpirun;
  int ranks = 2;
  std::string work_dir;  // the bench's log and rows go here
  bool quick = false;    // one round per size (tests; not for planning)
};

struct LinkFit {
  LinkCost link;
  double median_rel_error = 0;        // of the one overall pair against the measured rows
  double median_rel_error_bands = 0;  // of the per-size bands
  int rows = 0;
};

// Bad output from the bench (it failed, or no all_reduce rows) is an error
// naming the log.
LinkFit measure_link_cost(const LinkCalibration& c);

// The wait of a collective for its last rank after work (plan/arrival_wait.h):
// a 1 MiB all-reduce after 2-50 ms of GEMM on every rank (`bench comm
// --work-ms`) against the same all-reduce back to back, and the jitter
// fitted to the differences.
struct ArrivalFit {
  std::vector<double> works_s, waits_s;
  double jitter = 0;  // seconds^(1/2)
};
ArrivalFit measure_arrival_jitter(const LinkCalibration& c);

}  // namespace parallm
