// `parallm train --config FILE.toml [overrides]`: the run's flags come from
// the run schema (train/config/run_flags.h), the precedence of checkpoint,
// --model, --config, --deepspeed and flags from compose_run
// (train/run_sources.h); this file only wires them to the job.
#include <iostream>
#include <memory>

#include "base/env.h"
#include "base/error.h"
#include "cli/commands.h"
#include "comm/mpi/mpi_runtime.h"
#include "device/cuda/open_job_device.h"
#include "train/run_sources.h"
#include "train/train_job.h"

namespace parallm::cli {

namespace {
struct TrainCommand {
  RunSources sources;
  TrainJobOptions job;
  std::unique_ptr<RunFlags> flags;
};
}  // namespace

void add_train_command(CLI::App& app, CommandRegistry& reg) {
  auto c = std::make_shared<TrainCommand>();
  CLI::App* sub = app.add_subcommand("train", "train a model");
  sub->add_option("--config", c->sources.config,
                  "run file (TOML, tables " + run_schema().table_list() +
                      "; each key is the flag of the same name, or is shown after its help)");
  sub->add_option("--model", c->sources.preset,
                  "model preset when no config is given (e.g. gpt2-tiny)");
  sub->add_option("--deepspeed,--deepspeed-config", c->sources.deepspeed,
                  "DeepSpeed JSON config mapped onto the run (after --config, before the "
                  "other flags; docs/ecosystem.md)");
  sub->add_option("--threads", c->job.threads, "CPU threads (default: OMP_NUM_THREADS or all)");
  sub->add_option("--save-dtype", c->job.save_dtype, "checkpoint tensors: F32 or BF16");
  c->flags = std::make_unique<RunFlags>(sub, run_schema());
  sub->footer("\nEvery run-file key and flag, with the keys that have no flag: parallm settings "
              "(docs/settings.md).");

  reg.actions.emplace_back(sub, [c]() {
    const LaunchEnv env = read_launch_env();
    // Read and checked on every rank before MPI starts, reported by rank 0 only.
    try {
      c->job.run = compose_run(c->sources, *c->flags, env, std::cerr);
      c->job.run = checked_run_config(c->job, env.world_size);
    } catch (const Error&) {
      if (env.rank != 0) return 1;
      throw;
    }
    return comm::run_mpi_job([&](comm::MpiRuntime& rt) {
      const TrainConfig& t = c->job.run.train;
      comm::CommOptions co;  // the bound that turns a hung rank into a failure
      co.timeout = std::chrono::milliseconds(
          static_cast<int64_t>(t.resilience.comm_timeout_s * 1000));
      auto world = rt.world(co);
      const auto device = open_job_device(t.training.device, world.get(), env.local_rank,
                                          t.precision.allow_tf32);
      run_train_job(c->job, env, std::cerr, world.get(), device.get());
      return 0;
    });
  });
}

}  // namespace parallm::cli
