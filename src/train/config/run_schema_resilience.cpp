// [resilience]: how failures are noticed and slow ranks named
// (docs/resilience.md). The planted failures and slow ranks are test hooks:
// hidden from --help and never recorded, so a resumed run does not replant them.
#include "train/config/run_schema.h"

namespace parallm {

void declare_resilience_settings(RunSchema& s) {
  const char* t = "resilience";
  s.tables.push_back({t, {}});
  std::vector<Setting>& v = s.settings;
  v.push_back(field_setting(t, "comm_timeout", "--comm-timeout",
                            "seconds a blocking collective or send/receive may take before the "
                            "watchdog ends the job (default 300)",
                            PX_FIELD(train.resilience.comm_timeout_s))
                  .unrecorded());
  v.push_back(field_setting(t, "straggler_window", "--straggler-window",
                            "steps per straggler verdict: per-rank compute and communication "
                            "compared (0: off; default 10)",
                            PX_FIELD(train.resilience.straggler_window))
                  .unrecorded());
  v.push_back(field_setting(t, "straggler_threshold", "--straggler-threshold",
                            "a rank whose compute or communication is this many times the median "
                            "is named slow (default 1.2)",
                            PX_FIELD(train.resilience.straggler_threshold))
                  .unrecorded());
  v.push_back(field_setting(t, "plant_failures", "--plant-failures",
                            "test hook: KIND@STEP:RANK,... (kill, stop, error), the i-th in "
                            "attempt i of a supervised job",
                            PX_FIELD(train.resilience.plant_failures))
                  .unrecorded()
                  .hide());
  v.push_back(field_setting(t, "plant_slow_rank", "--plant-slow-rank",
                            "test hook: RANK:FRACTION, that rank's compute takes FRACTION longer",
                            PX_FIELD(train.resilience.plant_slow_rank))
                  .unrecorded()
                  .hide());
}

}  // namespace parallm
