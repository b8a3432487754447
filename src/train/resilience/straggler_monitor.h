// StragglerMonitor: names slow ranks with the cause (docs/resilience.md,
// "Stragglers"). Every step one small gather brings each rank's step,
// compute and communication times to rank 0; every straggler_window steps
// rank 0 compares each rank's medians with those of the other ranks of its
// pipeline stage and logs a line per slow rank, for compute or for
// communication. Invariant: time a rank spent waiting for another is not
// held against it, so the ranks waiting for a slow one are not named.
#pragma once
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "train/config/resilience_config.h"
#include "train/metrics.h"
#include "train/trainer.h"

namespace parallm {

enum class StragglerCause { Compute, Communication };

struct StragglerVerdict {
  int rank = 0;
  StragglerCause cause = StragglerCause::Compute;
  double ms = 0.0;         // the rank's median per step over the window
  double median_ms = 0.0;  // the median of the other ranks of its stage
  double ratio = 0.0;      // ms / median_ms
};

// A slow rank must also cost at least this share of the stage's median step
// time over the others, so that the ratio of two small numbers (a fraction
// of a millisecond of communication) names nobody.
inline constexpr double kStragglerMinShareOfStep = 0.05;
// And at least this many milliseconds: on shared cores the scheduler moves a
// rank's step by a millisecond or two (rank 0 also writes the metrics), and
// a straggler worth a line costs more than that.
inline constexpr double kStragglerMinExcessMs = 2.0;

// The verdict on one window. window[i][r]: step i's times of world rank r;
// stage[r]: rank r's pipeline stage (ranks are compared within a stage,
// whose ranks do the same work). Sorted by rank, compute before
// communication.
std::vector<StragglerVerdict> find_stragglers(const std::vector<std::vector<RankTimes>>& window,
                                              const std::vector<int>& stage, double threshold);

// "straggler: rank 2 compute 13.1 ms/step vs median 10.0 ms (1.31x) over steps 10-19"
std::string describe(const StragglerVerdict& v, int64_t first_step, int64_t last_step);

class StragglerMonitor {
 public:
  // world: every rank of the job (null or one rank: off); log: rank 0's
  // (other ranks print nothing); stage: this rank's pipeline stage.
  StragglerMonitor(const ResilienceConfig& cfg, comm::Communicator* world, std::ostream& log,
                   int stage = 0);
  bool enabled() const { return enabled_; }
  // Collective over the world, on every rank after every step: every rank's
  // times on rank 0 (empty elsewhere, and when off), for the metrics record;
  // at the end of a window, rank 0 logs its verdict.
  std::vector<RankTimes> on_step(const StepStats& s);

 private:
  comm::Communicator* world_;
  std::ostream& log_;
  int64_t window_steps_;
  double threshold_;
  bool enabled_;
  int stage_;
  std::vector<std::vector<RankTimes>> window_;  // rank 0: this window's steps
  std::vector<int> stages_;                     // rank 0: every rank's stage
  int64_t window_first_step_ = 0;
};

}  // namespace parallm
