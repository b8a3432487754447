#include "launch/job_log.h"

#include <regex>

namespace parallm {

std::optional<JobLine> read_job_line(const std::string& line) {
  // Compiled once per call site: the supervisor reads a few lines a second.
  static const std::regex step(R"(^\s*step\s+(\d+)/\d+ \|)");
  static const std::regex resumed(R"(resumed from .* \(step (\d+),.* loaded in ([0-9.]+) s\))");
  static const std::regex planted(R"(^parallm: planted (\w+) on rank (\d+) after step (\d+))");
  static const std::regex rank_error(R"(^parallm: rank (\d+) of \d+: (.*)$)");
  static const std::regex fatal(R"(^parallm: fatal: (.*\(rank (\d+) of (\d+)\).*)$)");
  static const std::regex died(
      R"(process rank (\d+) with PID \d+ on node (\S+) exited on signal (\d+) \(([^)]*)\))");
  std::smatch m;
  if (std::regex_search(line, m, step))
    return JobLine{JobLine::Kind::Step, std::stoll(m[1]), 0, -1, {}, 0};
  if (std::regex_search(line, m, resumed))
    return JobLine{JobLine::Kind::Resumed, std::stoll(m[1]), std::stod(m[2]), -1, {}, 0};
  if (std::regex_search(line, m, planted))
    return JobLine{JobLine::Kind::Planted, std::stoll(m[3]), 0, std::stoi(m[2]),
                   "planted " + m[1].str(), 0};
  if (std::regex_search(line, m, rank_error))
    return JobLine{JobLine::Kind::RankError, 0, 0, std::stoi(m[1]), m[2], 0};
  if (std::regex_search(line, m, fatal))
    return JobLine{JobLine::Kind::Watchdog, 0, 0, std::stoi(m[2]), m[1], std::stoi(m[3])};
  if (std::regex_search(line, m, died))
    return JobLine{JobLine::Kind::RankDied, 0, 0, std::stoi(m[1]),
                   "exited on signal " + m[3].str() + " (" + m[4].str() + ") on " + m[2].str()};
  return std::nullopt;
}

}  // namespace parallm
