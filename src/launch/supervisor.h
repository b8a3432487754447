// The supervisor behind `parallm launch`: runs a job command, and when it
// fails (a rank killed, an error, a hang its watchdog ended, or no progress
// for hang_timeout) restarts the same command, which resumes from the newest
// complete snapshot (`parallm train --save DIR --resume`), until it finishes
// or the restart budget is spent. Back-off doubles per restart up to a cap.
// Each attempt gets PARALLM_RESTART_COUNT. It says one line per failure
// (which rank, what, when, the last step) and one per recovery (time to
// detect, to restart, to load, steps redone), optionally as JSON lines.
// Given hosts and a probe, a host that fails the probe before a restart is
// dropped and the job restarts on the others with a smaller dp (elastic).
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
  std::string events_path;      // JSON lines: failure, recovered, finished, gave_up, elastic
  // Elastic (host_set.h): the hosts, the command's {dp} per host, the probe
  // run for each host before a restart, and the fewest hosts to go on with.
  std::string hosts;            // "h0:2,h1:2"; empty: the command as it is
  int dp_per_host = 0;
  std::string host_probe;       // e.g. "ssh {host} true"; empty: no host is ever dropped
  double probe_timeout_s = 5;
  int min_hosts = 1;
};

// Returns the job's exit status: 0 when an attempt finished, else the last
// attempt's status.
int supervise(const SupervisorOptions& opts, std::ostream& log);

}  // namespace parallm
