#include "launch/supervisor.h"

#include <fmt/ostream.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <optional>
#include <ostream>
#include <thread>

#include <nlohmann/json.hpp>

#include "base/env.h"
#include "base/error.h"
#include "launch/host_set.h"
#include "launch/job_log.h"
#include "launch/job_session.h"
#include "launch/stop_signals.h"

namespace parallm {
namespace {

using Clock = std::chrono::steady_clock;
double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// What one attempt showed.
struct Attempt {
  int status = 0;
  int64_t last_step = -1;         // highest "step N/M" seen (N steps done)
  std::optional<int64_t> resumed; // the checkpoint step it started from
  double load_s = 0;
  std::optional<Clock::time_point> first_step_at;
  std::optional<Clock::time_point> failed_at;  // the planted line, else the first error
  Clock::time_point ended_at;
  bool hung = false;
  int stopped_by = 0;             // a signal to the supervisor ended it
  std::string why;                // the failure in words
};

class EventLog {
 public:
  explicit EventLog(const std::string& path) {
    if (!path.empty()) {
      out_.open(path, std::ios::app);
      PX_CHECK(out_.good(), "launch: cannot write the events file '{}'", path);
    }
  }
  void write(const nlohmann::json& j) {
    if (out_.is_open()) out_ << j.dump() << "\n" << std::flush;
  }

 private:
  std::ofstream out_;
};

// The failure's words from the evidence, most telling first: a planted
// failure, an error a rank raised, a rank that died on a signal, a
// watchdog that gave up waiting.
struct Evidence {
  std::string planted, error, died, watchdog;
  void add(const JobLine& l) {
    std::string* slot = l.kind == JobLine::Kind::Planted     ? &planted
                        : l.kind == JobLine::Kind::RankError ? &error
                        : l.kind == JobLine::Kind::RankDied  ? &died
                        : l.kind == JobLine::Kind::Watchdog  ? &watchdog
                                                             : nullptr;
    if (slot == nullptr || !slot->empty()) return;
    *slot = l.kind == JobLine::Kind::Watchdog ? "watchdog: " + l.text
                                              : fmt::format("rank {}: {}", l.rank, l.text);
  }
  std::string words() const {
    std::vector<std::string> parts;
    for (const std::string* s : {&planted, &error, &died, &watchdog})
      if (!s->empty()) parts.push_back(*s);
    if (parts.empty()) return "no rank said why";
    std::string out = parts[0];
    for (size_t i = 1; i < parts.size(); ++i) out += "; " + parts[i];
    return out;
  }
};

// The recovery from `f`, seen from the attempt after it (`a`), once that
// attempt has made its first step (or ended without one).
void report_recovery(const Attempt& f, const Attempt& a, int attempt, EventLog& events,
                     std::ostream& log) {
  const double detect = seconds(f.ended_at - f.failed_at.value_or(f.ended_at));
  const double restart = a.first_step_at ? seconds(*a.first_step_at - f.ended_at) : NAN;
  const int64_t from = a.resumed.value_or(0);
  const int64_t redone = std::max<int64_t>(0, f.last_step - from);
  fmt::print(log,
             "parallm launch: recovered in attempt {}: failure detected in {:.1f} s, first "
             "step {:.1f} s after it ended (checkpoint loaded in {:.2f} s), resumed at step "
             "{}, {} step(s) redone\n",
             attempt + 1, detect, restart, a.load_s, from, redone);
  events.write({{"event", "recovered"}, {"attempt", attempt}, {"detect_s", detect},
                {"restart_s", restart}, {"load_s", a.load_s}, {"resumed_step", from},
                {"steps_redone", redone}});
}

Attempt run_attempt(const SupervisorOptions& o, const std::vector<std::string>& command,
                    int attempt, const Attempt* failed, const StopSignals& stop, EventLog& events,
                    std::ostream& log) {
  Attempt a;
  JobSession job(command, {{"PARALLM_RESTART_COUNT", std::to_string(attempt)}});
  Evidence ev;
  Clock::time_point last_progress = Clock::now();
  auto take = [&](const std::vector<std::string>& lines) {
    for (const std::string& line : lines) {
      log << line << "\n";
      const auto l = read_job_line(line);
      if (!l) continue;
      const auto now = Clock::now();
      switch (l->kind) {
        case JobLine::Kind::Step:
          a.last_step = std::max(a.last_step, l->step);
          if (!a.first_step_at) {
            a.first_step_at = now;
            if (failed) report_recovery(*failed, a, attempt, events, log);
          }
          last_progress = now;
          break;
        case JobLine::Kind::Resumed:
          a.resumed = l->step;
          a.load_s = l->load_s;
          last_progress = now;
          break;
        default:
          if (!a.failed_at) a.failed_at = now;
          ev.add(*l);
      }
    }
    log.flush();
  };
  while (true) {
    take(job.read_lines(100));
    if (auto st = job.exit_status()) {
      a.status = *st;
      break;
    }
    if (const int sig = stop.received(); sig != 0 && a.stopped_by == 0) {
      a.stopped_by = sig;
      job.kill_all();
    }
    if (o.hang_timeout_s > 0 && seconds(Clock::now() - last_progress) > o.hang_timeout_s) {
      a.hung = true;
      a.failed_at = last_progress;
      job.kill_all();
    }
  }
  a.ended_at = Clock::now();
  job.kill_all();  // ranks the launcher left behind (a stopped one)
  take(job.drain());
  if (failed && !a.first_step_at) report_recovery(*failed, a, attempt, events, log);
  if (a.hung)
    a.why = fmt::format("no progress for {:.0f} s after step {}; ", o.hang_timeout_s, a.last_step);
  a.why += ev.words();
  return a;
}

// Before a restart: the hosts that still answer their probe. Says which
// were lost and what the job becomes without them.
std::vector<Host> hosts_left(const SupervisorOptions& o, const std::vector<Host>& hosts,
                             EventLog& events, std::ostream& log) {
  if (o.host_probe.empty()) return hosts;
  std::vector<Host> left;
  int first_rank = 0;  // the launcher fills the hosts in order (--host h0:2,h1:2)
  for (const Host& h : hosts) {
    const std::string why = probe_host(o.host_probe, h, o.probe_timeout_s);
    const std::string ranks = h.slots == 1 ? fmt::format("rank {}", first_rank)
                                           : fmt::format("ranks {}-{}", first_rank,
                                                         first_rank + h.slots - 1);
    first_rank += h.slots;
    if (why.empty()) {
      left.push_back(h);
      continue;
    }
    fmt::print(log, "parallm launch: host {} ({} of the last attempt) is lost: {}\n", h.name,
               ranks, why);
    events.write({{"event", "host_lost"}, {"host", h.name}, {"ranks", ranks}, {"why", why}});
  }
  if (left.size() != hosts.size() && static_cast<int>(left.size()) >= o.min_hosts) {
    const int before = o.dp_per_host * static_cast<int>(hosts.size());
    const int after = o.dp_per_host * static_cast<int>(left.size());
    fmt::print(log,
               "parallm launch: elastic: going on with {} of {} hosts ({}){}; the global batch "
               "stays, gradient accumulation grows to keep it\n",
               left.size(), hosts.size(), hosts_spec(left),
               o.dp_per_host > 0 ? fmt::format(", dp {} -> {}", before, after) : "");
    events.write({{"event", "elastic"}, {"hosts", hosts_spec(left)}, {"dp_before", before},
                  {"dp_after", after}});
  }
  return left;
}

std::string exit_words(int status) {
  return status > 128 ? fmt::format("signal {}", status - 128) : fmt::format("code {}", status);
}

}  // namespace

int supervise(const SupervisorOptions& o, std::ostream& log) {
  PX_CHECK(!o.command.empty(), "launch: no command given (parallm launch [options] -- COMMAND)");
  PX_CHECK(o.max_restarts >= 0, "launch: --max-restarts must be >= 0, got {}", o.max_restarts);
  PX_CHECK(o.backoff_s >= 0 && o.backoff_max_s >= o.backoff_s,
           "launch: --backoff ({}) must be >= 0 and <= --backoff-max ({})", o.backoff_s,
           o.backoff_max_s);
  PX_CHECK(program_on_path(o.command[0]), "launch: cannot run '{}': not found on PATH or not executable",
           o.command[0]);
  EventLog events(o.events_path);
  const StopSignals stop;
  std::vector<Host> hosts = o.hosts.empty() ? std::vector<Host>{} : parse_hosts(o.hosts);
  PX_CHECK(o.min_hosts >= 1 && (hosts.empty() || o.min_hosts <= static_cast<int>(hosts.size())),
           "launch: --min-hosts ({}) must be between 1 and the hosts given ({})", o.min_hosts,
           hosts.size());
  std::optional<Attempt> failed;  // the previous attempt, when it failed
  for (int attempt = 0;; ++attempt) {
    if (failed && !hosts.empty()) {
      hosts = hosts_left(o, hosts, events, log);
      if (static_cast<int>(hosts.size()) < o.min_hosts) {
        fmt::print(log, "parallm launch: giving up: {} host(s) left, --min-hosts is {}\n",
                   hosts.size(), o.min_hosts);
        events.write({{"event", "gave_up"}, {"attempt", attempt}, {"why", "too few hosts"}});
        return failed->status;
      }
    }
    const std::vector<std::string> command =
        hosts.empty() ? o.command : command_for(o.command, hosts, o.dp_per_host);
    const auto started = Clock::now();
    Attempt a =
        run_attempt(o, command, attempt, failed ? &*failed : nullptr, stop, events, log);
    if (a.stopped_by != 0) {
      fmt::print(log, "parallm launch: signal {} received: the job is ended (no restart)\n",
                 a.stopped_by);
      events.write({{"event", "stopped"}, {"attempt", attempt}, {"signal", a.stopped_by}});
      return 128 + a.stopped_by;
    }
    if (a.status == 0) {
      fmt::print(log, "parallm launch: finished in attempt {} ({} restart(s))\n", attempt + 1,
                 attempt);
      events.write({{"event", "finished"}, {"attempt", attempt}, {"restarts", attempt}});
      return 0;
    }
    fmt::print(log,
               "parallm launch: attempt {} failed after {:.1f} s at step {} (exit {}): {}\n",
               attempt + 1, seconds(a.ended_at - started), a.last_step, exit_words(a.status),
               a.why);
    events.write({{"event", "failure"}, {"attempt", attempt}, {"last_step", a.last_step},
                  {"status", a.status}, {"hung", a.hung}, {"why", a.why}});
    if (attempt >= o.max_restarts) {
      fmt::print(log,
                 "parallm launch: giving up: {} restart(s) allowed (--max-restarts) and all "
                 "used; the last failure: {}\n",
                 o.max_restarts, a.why);
      events.write({{"event", "gave_up"}, {"attempt", attempt}, {"why", a.why}});
      return a.status;
    }
    const double wait = std::min(o.backoff_max_s, o.backoff_s * std::pow(2.0, attempt));
    fmt::print(log, "parallm launch: restarting in {:.1f} s (restart {} of {})\n", wait,
               attempt + 1, o.max_restarts);
    log.flush();
    for (const auto until = Clock::now() + std::chrono::duration<double>(wait);
         Clock::now() < until && stop.received() == 0;)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (const int sig = stop.received(); sig != 0) {
      fmt::print(log, "parallm launch: signal {} received before the restart: stopping\n", sig);
      return 128 + sig;
    }
    failed = std::move(a);
  }
}

}  // namespace parallm
