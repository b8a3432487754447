// `parallm calibrate [--out profile.json]`: measures this machine's kernels
// and local link into a device profile for `parallm plan --profile`
// (train/calibrate/calibrate_job.h, docs/planner.md "Calibration").
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "train/calibrate/calibrate_job.h"

namespace parallm::cli {

void add_calibrate_command(CLI::App& app, CommandRegistry& reg) {
  auto o = std::make_shared<CalibrateOptions>();
  CLI::App* sub = app.add_subcommand(
      "calibrate", "measure this machine's kernels and links into a profile for `parallm plan`");
  sub->add_option("--out,-o", o->out, "profile to write (JSON; default profile.json)");
  sub->add_option("--name", o->name, "the profile's name (default: CPU model and cores)");
  sub->add_option("--cores", o->cores, "cores the ranks share (default: this process's)");
  sub->add_option("--devices-per-node", o->devices_per_node,
                  "ranks the planner may place on this machine (default 8)");
  sub->add_option("--link-ranks", o->link_ranks, "ranks of the all-reduce sweep (default 2)");
  sub->add_option("--mpirun", o->mpirun, "launcher of the all-reduce sweep, before -np N");
  sub->add_option("--inter-node-mpirun", o->inter_node_mpirun,
                  "launcher placing the sweep's ranks on different nodes: its fit becomes the "
                  "inter-node link (default: one link for both)");
  sub->add_flag("--quick", o->quick, "a small grid and short rounds (tests only)");
  reg.actions.emplace_back(sub, [o]() { return run_calibrate(*o, std::cout); });
}

}  // namespace parallm::cli
