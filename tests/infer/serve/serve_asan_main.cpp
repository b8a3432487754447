// The entry of parallm_serve_asan: `parallm_serve_asan serve ...`, the same
// serve command as `parallm serve`, in a binary whose serving code (the
// HTTP handlers, request parsing, the engines, scheduler and block pool,
// src/infer/serve and src/cli/serve_command.cpp) is compiled with
// AddressSanitizer while the layers below link uninstrumented, so that the
// robustness test runs the server under ASan without an ASan build of
// the whole project (tests/infer/serve/tests.cmake).
#include <CLI/CLI.hpp>

#include "cli/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"parallm_serve_asan: `parallm serve` with the serving code under ASan"};
  app.require_subcommand(1);
  parallm::cli::CommandRegistry reg;
  parallm::cli::add_serve_command(app, reg);
  return parallm::cli::run_command(app, reg, argc, argv);
}
