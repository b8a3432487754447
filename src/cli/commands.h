// Each subcommand registers its options and an action; main runs the action
// of the parsed subcommand. No logic lives in cli/: it only wires flags to
// library calls.
#pragma once
#include <CLI/CLI.hpp>

#include <functional>
#include <utility>
#include <vector>

namespace parallm::cli {

struct CommandRegistry {
  std::vector<std::pair<CLI::App*, std::function<int()>>> actions;
};

void add_train_command(CLI::App& app, CommandRegistry& reg);
void add_eval_command(CLI::App& app, CommandRegistry& reg);
void add_tokenize_command(CLI::App& app, CommandRegistry& reg);
void add_grid_command(CLI::App& app, CommandRegistry& reg);
void add_bench_command(CLI::App& app, CommandRegistry& reg);
void add_memory_command(CLI::App& app, CommandRegistry& reg);
void add_plan_command(CLI::App& app, CommandRegistry& reg);
void add_schedule_command(CLI::App& app, CommandRegistry& reg);
void add_export_command(CLI::App& app, CommandRegistry& reg);
void add_generate_command(CLI::App& app, CommandRegistry& reg);
void add_perplexity_command(CLI::App& app, CommandRegistry& reg);
void add_serve_command(CLI::App& app, CommandRegistry& reg);
void add_verify_command(CLI::App& app, CommandRegistry& reg);
void add_calibrate_command(CLI::App& app, CommandRegistry& reg);
void add_settings_command(CLI::App& app, CommandRegistry& reg);
void add_launch_command(CLI::App& app, CommandRegistry& reg);

// Parses argv and runs the chosen subcommand's action: a parse error exits
// as CLI11 does, parallm::Error prints once and returns 1, anything else 2.
int run_command(CLI::App& app, const CommandRegistry& reg, int argc, char** argv);

}  // namespace parallm::cli
