// The supervisor behind `parallm launch`: runs a job command, and when it
// fails (a rank killed, an error, a hang its watchdog ended, or no progress
// for hang_timeout) restarts the same command, which resumes from the newest
// complete snapshot (`parallm train --save DIR --resume`), until it finishes
// or the restart budget is spent. Back-off doubles per restart up to a cap.
// Each attempt gets PARALLM_RESTART_COUNT. It says one line per failure
// (which rank, what, when, the last step) and one per recovery (time to
// detect, to restart, to load, steps redone), optionally as JSON lines.
#pragma once
#include <iosfwd>
#include <string>
#include <vector>

namespace parallm {

struct SupervisorOptions {
  std::vector<std::string> command;
  int max_restarts = 3;
  double backoff_s = 1.0;       // before the first restart; doubled for each next one
  double backoff_max_s = 30.0;
  double hang_timeout_s = 0;    // no new step line for this long: ended as hung (0: off)
  std::string events_path;      // JSON lines: failure, recovered, finished, gave_up
};

// Returns the job's exit status: 0 when an attempt finished, else the last
// attempt's status.
int supervise(const SupervisorOptions& opts, std::ostream& log);

}  // namespace parallm
