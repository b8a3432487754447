// The run a train command line describes, from its sources in precedence
// order: the checkpoint a resume starts from < --model (a catalog preset) <
// --config (TOML) < --deepspeed (JSON) < the flags. dp not given is
// inferred from the world (before DeepSpeed's batch arithmetic needs it).
#pragma once
#include <ostream>
#include <string>

#include "base/env.h"
#include "train/config/run_flags.h"

namespace parallm {

struct RunSources {
  std::string config;     // --config FILE.toml
  std::string preset;     // --model NAME
  std::string deepspeed;  // --deepspeed FILE.json
};

// Reports (rank 0) what a resume keeps and what --deepspeed ignores on `log`.
RunConfig compose_run(const RunSources& src, const RunFlags& flags, const LaunchEnv& env,
                      std::ostream& log);

}  // namespace parallm
