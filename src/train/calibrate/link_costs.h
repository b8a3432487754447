// `parallm calibrate`'s communication half: runs `parallm bench comm` (ring
// all-reduce, 4 KiB to 16 MiB) on `ranks` local ranks and fits the
// alpha-beta cost the step-time model uses for a link (plan/device_profile.h):
// t = 2(n-1) alpha + 2(n-1)/n bytes / bandwidth, by least squares on the
// measured times, weighted by 1 / t so small and large messages count alike.
#pragma once
#include <ostream>
#include <string>

#include "base/child_process.h"
#include "plan/device_profile.h"

namespace parallm {

struct LinkCalibration {
  std::string mpirun = kLocalMpirun;
  int ranks = 2;
  std::string work_dir;  // the bench's log and rows go here
};

struct LinkFit {
  LinkCost link;
  double median_rel_error = 0;  // of the fit against the measured rows
  int rows = 0;
};

// Bad output from the bench (it failed, or no all_reduce rows) is an error
// naming the log.
LinkFit measure_link_cost(const LinkCalibration& c);

}  // namespace parallm
