// `parallm launch [--max-restarts K] [--backoff S] [--hang-timeout T] -- COMMAND...`:
// runs a job and restarts it from its newest snapshot when it fails
// (launch/supervisor.h, docs/resilience.md). The command is anything, usually
// `mpirun -np N parallm train ... --save DIR --resume`.
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "launch/supervisor.h"

namespace parallm::cli {

void add_launch_command(CLI::App& app, CommandRegistry& reg) {
  auto o = std::make_shared<SupervisorOptions>();
  CLI::App* sub = app.add_subcommand(
      "launch", "run a job and restart it from its newest snapshot when a rank fails or hangs");
  sub->add_option("--max-restarts", o->max_restarts, "restarts allowed before giving up (3)");
  sub->add_option("--backoff", o->backoff_s, "seconds before the first restart, doubled for each next (1)");
  sub->add_option("--backoff-max", o->backoff_max_s, "longest wait between restarts (30)");
  sub->add_option("--hang-timeout", o->hang_timeout_s,
                  "end the job when no step line came for this many seconds (0: off; the "
                  "ranks' --comm-timeout watchdog ends hangs in communication)");
  sub->add_option("--events", o->events_path, "JSON lines of failures and recoveries");
  sub->add_option("--hosts", o->hosts,
                  "elastic: the hosts, \"h0:2,h1:2\"; the command's {hosts}, {np}, {nhosts} and "
                  "{dp} are made from the hosts left");
  sub->add_option("--dp-per-host", o->dp_per_host, "elastic: {dp} = this x the hosts left");
  sub->add_option("--host-probe", o->host_probe,
                  "elastic: run before each restart per host ({host} replaced; e.g. \"ssh {host} "
                  "true\"); a host that fails it is dropped");
  sub->add_option("--probe-timeout", o->probe_timeout_s, "seconds a probe may take (5)");
  sub->add_option("--min-hosts", o->min_hosts, "elastic: give up below this many hosts (1)");
  sub->add_option("command", o->command, "the job, after --")->required();
  sub->footer(
      "\nExample: parallm launch --max-restarts 3 -- mpirun -np 4 parallm train --config run.toml "
      "--save ck --save-interval 5 --resume --comm-timeout 30");
  reg.actions.emplace_back(sub, [o]() { return supervise(*o, std::cerr); });
}

}  // namespace parallm::cli
