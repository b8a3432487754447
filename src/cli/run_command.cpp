// run_command (see commands.h): the parse-then-run of every parallm entry
// point, so that `parallm` and test binaries built from a subset of the
// commands print errors and choose exit codes the same way.
#include <fmt/core.h>

#include "base/error.h"
#include "cli/commands.h"
#include "ops/host_runtime.h"

namespace parallm::cli {

int run_command(CLI::App& app, const CommandRegistry& reg, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    // Fixed once, first: a bad PARALLM_MAX_CPU_ISA fails before any work.
    ops::init_host_isa();
    for (const auto& [sub, run] : reg.actions)
      if (sub->parsed()) return run();
  } catch (const Error& e) {
    fmt::print(stderr, "parallm: error: {}\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "parallm: internal error: {}\n", e.what());
    return 2;
  }
  return 0;
}

}  // namespace parallm::cli
