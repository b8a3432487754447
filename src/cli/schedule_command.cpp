// `parallm schedule --pp 4 --micro-batches 8 --schedule 1f1b [--virtual-stages 2]
// [--svg out.svg] [--trace out.json] [--transfers]`: prints the per-stage
// action lists of a pipeline schedule, simulates it with unit costs (F = 1,
// B = 2, or B = W = 1 when split) and compares the bubble with the formula;
// draws the ideal timeline. Runs nothing distributed; no logic lives here.
#include <fmt/core.h>

#include <memory>
#include <string>

#include "base/error.h"
#include "cli/commands.h"
#include "parallel/pipeline/schedule.h"
#include "parallel/pipeline/sim_timeline.h"
#include "parallel/pipeline/simulate.h"
#include "trace/chrome_trace.h"
#include "trace/svg_timeline.h"

namespace parallm::cli {

void add_schedule_command(CLI::App& app, CommandRegistry& reg) {
  struct Flags {
    int pp = 4, micro_batches = 8, virtual_stages = 1;
    std::string schedule = "1f1b", svg, trace;
    bool transfers = false;
  };
  auto f = std::make_shared<Flags>();
  CLI::App* sub = app.add_subcommand("schedule", "print and draw a pipeline schedule (simulated)");
  sub->add_option("--pp,--pipeline-model-parallel-size", f->pp, "pipeline stages");
  sub->add_option("--micro-batches,-m", f->micro_batches, "micro-batches per step");
  sub->add_option("--schedule", f->schedule, "gpipe | 1f1b | interleaved | zb | dualpipev");
  sub->add_option("--virtual-stages,-v", f->virtual_stages, "model chunks per stage (interleaved; dualpipev: 2)");
  sub->add_option("--svg", f->svg, "write the simulated timeline as SVG");
  sub->add_option("--trace", f->trace, "write the simulated timeline as a Chrome trace (JSON)");
  sub->add_flag("--transfers", f->transfers, "list sends and receives too");

  reg.actions.emplace_back(sub, [f]() {
    using namespace pipeline;
    ScheduleSpec spec;
    spec.kind = schedule_kind_from_name(f->schedule);
    spec.pp = f->pp;
    spec.micro_batches = f->micro_batches;
    // DualPipeV's two chunks are the schedule's own.
    const bool v_shape = spec.kind == ScheduleKind::DualPipeV && f->virtual_stages == 1;
    spec.virtual_stages = v_shape ? 2 : f->virtual_stages;
    const Schedule schedule = make_schedule(spec);
    const Simulation sim = simulate(schedule, default_costs(spec.virtual_stages));
    PX_CHECK(!sim.deadlocked, "schedule deadlocks: {}", sim.deadlock);
    fmt::print(
        "{} schedule, pp {}, {} micro-batches{}\n", schedule_kind_name(spec.kind), spec.pp,
        spec.micro_batches,
        spec.virtual_stages > 1 ? fmt::format(", {} virtual stages", spec.virtual_stages) : "");
    fmt::print("{}", format_schedule(schedule, f->transfers));
    fmt::print(
        "simulated bubble {:.4f} (formula {:.4f}), step time {:.4g} (1 = one forward of a whole "
        "stage)\n",
        sim.bubble_fraction, ideal_bubble_fraction(spec), sim.step_time);
    const std::string title =
        fmt::format("{} pp={} m={}{}", schedule_kind_name(spec.kind), spec.pp, spec.micro_batches,
                    spec.virtual_stages > 1 ? fmt::format(" V={}", spec.virtual_stages) : "");
    const trace::Timeline timeline = simulation_timeline(sim, spec.virtual_stages);
    if (!f->svg.empty()) {
      trace::write_timeline_svg(timeline, {.title = title}, f->svg);
      fmt::print("wrote {}\n", f->svg);
    }
    if (!f->trace.empty()) {
      trace::write_chrome_trace(timeline, f->trace);
      fmt::print("wrote {}\n", f->trace);
    }
    return 0;
  });
}

}  // namespace parallm::cli
