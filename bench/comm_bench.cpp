// Stand-alone `parallm bench comm`: the same command (src/cli/bench_command.cpp)
// without the rest of the CLI, for `mpirun -np N build/bench/comm_bench [flags]`.
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <algorithm>
#include <string>
#include <vector>

#include "base/error.h"
#include "cli/commands.h"

namespace parallm::cli {
// Declared in cli/commands.h once main registers it; repeated here so this
// executable does not depend on that.
void add_bench_command(CLI::App& app, CommandRegistry& reg);
}  // namespace parallm::cli

int main(int argc, char** argv) {
  CLI::App app{"parallm bench comm"};
  parallm::cli::CommandRegistry reg;
  parallm::cli::add_bench_command(app, reg);
  std::vector<std::string> args = {"bench", "comm"};
  for (int i = 1; i < argc; ++i) args.emplace_back(argv[i]);
  std::reverse(args.begin(), args.end());  // CLI11 takes the arguments reversed
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    for (auto& [sub, run] : reg.actions)
      if (sub->parsed()) return run();
  } catch (const parallm::Error& e) {
    fmt::print(stderr, "comm_bench: error: {}\n", e.what());
    return 1;
  }
  return 0;
}
