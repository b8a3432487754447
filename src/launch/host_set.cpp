#include "launch/host_set.h"

#include <fmt/format.h>

#include <chrono>
#include <thread>

#include "base/child_process.h"
#include "base/error.h"
#include "launch/job_session.h"

namespace parallm {
namespace {

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t at = 0; (at = s.find(from, at)) != std::string::npos; at += to.size())
    s.replace(at, from.size(), to);
  return s;
}

}  // namespace

std::vector<Host> parse_hosts(const std::string& spec) {
  std::vector<Host> out;
  for (const std::string& part : split_list(spec, ',')) {
    Host h;
    const size_t colon = part.find(':');
    h.name = part.substr(0, colon);
    if (colon != std::string::npos) {
      try {
        h.slots = std::stoi(part.substr(colon + 1));
      } catch (const std::exception&) {
        PX_FAIL("--hosts: '{}' is not HOST or HOST:SLOTS", part);
      }
    }
    PX_CHECK(!h.name.empty() && h.slots > 0, "--hosts: '{}' is not HOST or HOST:SLOTS", part);
    out.push_back(h);
  }
  PX_CHECK(!out.empty(), "--hosts: no host in '{}'", spec);
  return out;
}

std::string hosts_spec(const std::vector<Host>& hosts) {
  std::string s;
  for (const Host& h : hosts) {
    if (!s.empty()) s += ',';
    s += fmt::format("{}:{}", h.name, h.slots);
  }
  return s;
}

std::vector<std::string> command_for(const std::vector<std::string>& templ,
                                     const std::vector<Host>& hosts, int dp_per_host) {
  int np = 0;
  for (const Host& h : hosts) np += h.slots;
  std::vector<std::string> out;
  for (std::string w : templ) {
    w = replace_all(w, "{hosts}", hosts_spec(hosts));
    w = replace_all(w, "{np}", std::to_string(np));
    w = replace_all(w, "{nhosts}", std::to_string(hosts.size()));
    w = replace_all(w, "{dp}", std::to_string(dp_per_host * static_cast<int>(hosts.size())));
    out.push_back(std::move(w));
  }
  return out;
}

std::string probe_host(const std::string& probe, const Host& host, double timeout_s) {
  JobSession p({"sh", "-c", replace_all(probe, "{host}", host.name)}, {});
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  std::string said;
  while (std::chrono::steady_clock::now() < deadline) {
    for (const std::string& l : p.read_lines(50)) said = l;
    if (auto st = p.exit_status())
      return *st == 0 ? "" : fmt::format("the probe exited with {}{}", *st,
                                         said.empty() ? "" : ": " + said);
  }
  return fmt::format("the probe did not answer within {:.0f} s", timeout_s);
}

}  // namespace parallm
