// ResilienceConfig: the [resilience] table: how a failure is noticed and
// how slow ranks are named. comm_timeout bounds every blocking collective or
// point-to-point call (the watchdog then names the op and ends the job, so
// a stopped or hung rank becomes a failure the supervisor restarts,
// docs/resilience.md); the straggler settings compare each rank's compute
// and communication time with the others'. The plant_* settings are test
// hooks (hidden, never recorded): they make failures and slow ranks on
// purpose so the chaos tests can show the recovery.
#pragma once
#include <cstdint>
#include <string>

namespace parallm {

struct ResilienceConfig {
  double comm_timeout_s = 300;        // --comm-timeout
  int64_t straggler_window = 10;      // steps per straggler verdict (0: off)
  double straggler_threshold = 1.2;   // a rank this many times the median is slow
  // "KIND@STEP:RANK,..." with KIND kill, stop or error: the i-th failure is
  // planted in attempt i of a supervised job (LaunchEnv::restart_count).
  std::string plant_failures;
  // "RANK:FRACTION": that rank's compute takes FRACTION longer.
  std::string plant_slow_rank;

  void validate() const;
};

}  // namespace parallm
