// `parallm verify --config RUN --layout "tp=2 pp=2 dp=2" --steps N`: does the
// layout follow the one-process trajectory, and if not, where does it first
// leave it (docs/verify.md). Flags verify does not know are `parallm train`
// flags for both runs (e.g. --data, --seq-len, --global-batch-size).
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "train/verify/verify_job.h"

namespace parallm::cli {

void add_verify_command(CLI::App& app, CommandRegistry& reg) {
  struct Flags {
    VerifyOptions opts;
    std::string layout;
    bool no_locate = false;
  };
  auto f = std::make_shared<Flags>();
  CLI::App* sub = app.add_subcommand(
      "verify", "train one process and a layout side by side; say where they first differ");
  sub->allow_extras();
  sub->add_option("--config", f->opts.config, "run file (TOML), as for `parallm train`");
  sub->add_option("--model", f->opts.model, "model preset when no config is given");
  sub->add_option("--layout", f->layout,
                  "the layout to check, e.g. \"tp=2 sp\", \"pp=2 schedule=1f1b\", \"dp=2 zero=3\" "
                  "(keys: tp pp dp cp ep zero schedule vp dp-mode cp-comm recompute ...)")
      ->required();
  sub->add_option("--steps", f->opts.steps, "optimizer steps on both sides (default 3)");
  sub->add_option("--tolerance", f->opts.tolerance,
                  "one relative bound for every comparison (default: the bounds derived "
                  "from the run, docs/testing.md)");
  sub->add_option("--report", f->opts.report_path, "write the verdict as JSON to FILE");
  sub->add_option("--threads", f->opts.threads, "CPU threads per process (default 1)");
  sub->add_option("--mpirun", f->opts.mpirun, "launcher of the layout run, before -np N");
  sub->add_flag("--keep-files", f->opts.keep_files, "keep the runs' logs, metrics and checkpoints");
  sub->add_flag("--no-locate", f->no_locate, "on divergence, do not rerun step 1 to find the op");
  sub->add_flag("--same-optimizer", f->opts.same_optimizer,
                "train with the run's optimizer, not plain SGD (Adam amplifies fp32 noise)");
  sub->add_option("--inject-fault", f->opts.inject_fault,
                  "verify's own tests: plant a bug in the layout run")
      ->group("");
  reg.actions.emplace_back(sub, [f, sub]() {
    f->opts.layout = parse_layout(f->layout);
    f->opts.locate = !f->no_locate;
    f->opts.train_args = sub->remaining();
    return run_verify(f->opts, std::cout);
  });
}

}  // namespace parallm::cli
