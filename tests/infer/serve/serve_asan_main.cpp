// The entry of parallm_serve_asan: `parallm_serve_asan serve ...`, the same
// serve command as `parallm serve`, in a binary whose serving code (the
// HTTP handlers, request parsing, the engines, scheduler and block pool,
// src/infer/serve and src/cli/serve_command.cpp) is compiled with
// AddressSanitizer while the layers below link uninstrumented, so that the
// robustness test runs the server under ASan without an ASan build of
// the whole project (tests/infer/serve/tests.cmake).
#include <fmt/core.h>
#include <CLI/CLI.hpp>

#include "base/error.h"
#include "cli/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"parallm_serve_asan: `parallm serve` with the serving code under ASan"};
  app.require_subcommand(1);
  parallm::cli::CommandRegistry reg;
  parallm::cli::add_serve_command(app, reg);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    for (auto& [sub, run] : reg.actions)
      if (sub->parsed()) return run();
  } catch (const parallm::Error& e) {
    fmt::print(stderr, "parallm: error: {}\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "parallm: internal error: {}\n", e.what());
    return 2;
  }
  return 0;
}
