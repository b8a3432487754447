// The hosts an elastic job runs on, and the command made for them. The
// command names them through placeholders: {hosts} (Open MPI's
// "h0:2,h1:2"), {np} (the ranks), {nhosts}, and {dp} (dp_per_host x the
// hosts: tp and pp stay inside a host, dp spans hosts, so losing a host
// lowers dp; the global batch is a setting of the run, so gradient
// accumulation rises to keep it). Before a restart each host is probed
// (a command with {host}, e.g. `ssh {host} true`); one that fails the probe
// is lost for good and the job goes on without it.
#pragma once
#include <string>
#include <vector>

namespace parallm {

struct Host {
  std::string name;
  int slots = 1;
};

// "h0:2,h1:2" (a host without ":N" has 1 slot); an error names a bad part.
std::vector<Host> parse_hosts(const std::string& spec);
std::string hosts_spec(const std::vector<Host>& hosts);

// The command with every placeholder replaced.
std::vector<std::string> command_for(const std::vector<std::string>& templ,
                                     const std::vector<Host>& hosts, int dp_per_host);

// Runs the probe for `host` (through sh -c, {host} replaced), bounded by
// timeout_s; "" when it succeeds, else why not.
std::string probe_host(const std::string& probe, const Host& host, double timeout_s);

}  // namespace parallm
