// parallm command-line entry: parses the subcommand and hands over to one
// file per subcommand (cli/*_command.cpp). Errors print once, exit non-zero.
#include <CLI/CLI.hpp>

#include "cli/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"parallm: train and run transformer language models"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "parallm 0.1");
  parallm::cli::CommandRegistry reg;
  parallm::cli::add_train_command(app, reg);
  parallm::cli::add_eval_command(app, reg);
  parallm::cli::add_tokenize_command(app, reg);
  parallm::cli::add_grid_command(app, reg);
  parallm::cli::add_bench_command(app, reg);
  parallm::cli::add_memory_command(app, reg);
  parallm::cli::add_plan_command(app, reg);
  parallm::cli::add_schedule_command(app, reg);
  parallm::cli::add_export_command(app, reg);
  parallm::cli::add_generate_command(app, reg);
  parallm::cli::add_perplexity_command(app, reg);
  parallm::cli::add_serve_command(app, reg);
  parallm::cli::add_verify_command(app, reg);
  parallm::cli::add_calibrate_command(app, reg);
  parallm::cli::add_settings_command(app, reg);
  parallm::cli::add_launch_command(app, reg);
  return parallm::cli::run_command(app, reg, argc, argv);
}
