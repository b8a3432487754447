// `parallm settings`: every run-file key and train flag, with its help, as
// Markdown (the text of docs/settings.md).
#include <iostream>

#include "cli/commands.h"
#include "train/config/settings_reference.h"

namespace parallm::cli {

void add_settings_command(CLI::App& app, CommandRegistry& reg) {
  CLI::App* sub = app.add_subcommand(
      "settings", "every run-file key and `parallm train` flag, as Markdown (docs/settings.md)");
  reg.actions.emplace_back(sub, [] {
    std::cout << settings_reference(run_schema());
    return 0;
  });
}

}  // namespace parallm::cli
