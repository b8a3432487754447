// What the supervisor reads in a job's stderr: parallm's own lines (the
// progress line "step N/M", "resumed from ... (step S ... loaded in X s)",
// "parallm: planted ...", "parallm: rank R of N: error", the watchdog's
// "parallm: fatal: ...") and mpirun's line naming a rank that died on a
// signal. One line in, at most one fact out; the formats are parallm's and
// Open MPI's, held by tests/launch.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

namespace parallm {

struct JobLine {
  enum class Kind { Step, Resumed, Planted, RankError, Watchdog, RankDied } kind;
  int64_t step = 0;       // Step: steps done; Resumed: the checkpoint's step
  double load_s = 0;      // Resumed: seconds to verify and load
  int rank = -1;          // RankError, Watchdog (the rank that waited), RankDied, Planted
  std::string text;       // the failure in words
  int world = 0;          // Watchdog: the size of the group it waited on
};

std::optional<JobLine> read_job_line(const std::string& line);

}  // namespace parallm
