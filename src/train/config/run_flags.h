// The train command's flags, generated from the run schema: one CLI11
// option per setting that names flags, grouped under its table in --help,
// each applied over the run (after the run file and --deepspeed) in the
// schema's order. A switch takes no value; every other flag takes the
// setting's kind, and a setting's check names the flag when it fails.
#pragma once
#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

#include "train/config/run_schema.h"

namespace parallm {

class RunFlags {
 public:
  // Adds the flags to `sub` (the schema must outlive parsing).
  RunFlags(CLI::App* sub, const RunSchema& schema);

  // Every flag the command line gave, in declaration order.
  void apply(RunConfig& rc) const;
  // Whether the command line gave the flag called `name` ("--dp").
  bool given(const std::string& name) const;

 private:
  struct Bound {
    CLI::Option* option;
    std::function<void(RunConfig&)> apply;
  };
  std::vector<Bound> bound_;
  CLI::App* sub_;
};

}  // namespace parallm
