// `parallm grid --tp 2 --pp 2 --dp 2 [--cp N --ep N] [--world N]`: prints
// which ranks form each group, for planning; needs no MPI. Under mpirun the
// launcher's world size is used when --world is absent, and rank 0 prints.
#include <iostream>
#include <memory>

#include "base/env.h"
#include "cli/commands.h"
#include "grid/grid_report.h"
#include "grid/grid_request.h"

namespace parallm::cli {

void add_grid_command(CLI::App& app, CommandRegistry& reg) {
  struct Flags {
    GridSizes sizes;
    int world = 0, gpus_per_node = 8;
    bool json = false;
    CLI::Option* dp_opt = nullptr;
    CLI::Option* world_opt = nullptr;
  };
  auto f = std::make_shared<Flags>();
  CLI::App* sub = app.add_subcommand("grid", "show which ranks form each parallel group");
  sub->add_option("--tp,--tensor-model-parallel-size", f->sizes.tp, "tensor-parallel size");
  sub->add_option("--pp,--pipeline-model-parallel-size", f->sizes.pp, "pipeline-parallel size");
  f->dp_opt = sub->add_option("--dp,--data-parallel-size", f->sizes.dp,
                              "data-parallel size (default: world / (tp x cp x pp), or 1)");
  sub->add_option("--cp,--context-parallel-size", f->sizes.cp, "context-parallel size");
  sub->add_option("--ep,--expert-model-parallel-size", f->sizes.ep,
                  "expert-parallel size (divides dp x cp)");
  f->world_opt = sub->add_option("--world", f->world,
                                 "world size (default: the launcher's, else tp x cp x dp x pp)");
  sub->add_option("--gpus-per-node", f->gpus_per_node, "ranks per node, to show node placement");
  sub->add_flag("--json", f->json, "print JSON instead of text");

  reg.actions.emplace_back(sub, [f]() {
    const LaunchEnv env = read_launch_env();
    GridRequest req;
    req.sizes = f->sizes;
    req.dp_given = f->dp_opt->count() > 0;
    if (f->world_opt->count() > 0) req.world_size = f->world;
    req.launch_world_size = env.world_size;
    const RankGrid grid = resolve_grid(req);
    if (env.rank != 0) return 0;  // one report per job
    if (f->json)
      std::cout << format_grid_json(grid, f->gpus_per_node);
    else
      std::cout << format_grid_text(grid, f->gpus_per_node);
    return 0;
  });
}

}  // namespace parallm::cli
