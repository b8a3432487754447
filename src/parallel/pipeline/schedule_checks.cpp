// Structural checks of schedule lists and in-flight counting.
#include "parallel/pipeline/schedule_checks.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <tuple>

namespace parallm::pipeline {

std::vector<std::string> schedule_problems(const Schedule& s) {
  std::vector<std::string> out;
  const int pp = static_cast<int>(s.stages.size());
  const int m = s.spec.micro_batches, v = s.spec.virtual_stages;
  // (kind, micro, chunk, from, to) -> count of sends minus receives
  std::map<std::tuple<int, int, int, int, int>, int> pending;
  for (int st = 0; st < pp; ++st) {
    // Position of each compute kind per (micro, chunk); -1 when absent.
    std::map<std::pair<int, int>, std::map<ActionKind, int>> seen;
    const auto& list = s.stages[st];
    for (int i = 0; i < static_cast<int>(list.size()); ++i) {
      const Action& a = list[i];
      const std::string name = format_action(a, true);
      if (a.micro_batch < 0 || a.micro_batch >= m || a.chunk < 0 || a.chunk >= v)
        out.push_back(fmt::format("stage {}: {} is outside m {} x V {}", st, name, m, v));
      if (is_compute(a.kind)) {
        auto& pos = seen[{a.micro_batch, a.chunk}];
        if (pos.count(a.kind)) out.push_back(fmt::format("stage {}: {} runs twice", st, name));
        pos[a.kind] = i;
        continue;
      }
      const bool neighbour =
          a.peer != st && (a.peer == (st + 1) % pp || a.peer == (st + pp - 1) % pp);
      if (!neighbour) {
        out.push_back(fmt::format("stage {}: {} is not with a neighbouring stage", st, name));
        continue;
      }
      const ActionKind send = is_send(a.kind) ? a.kind : matching_transfer(a.kind);
      const int from = is_send(a.kind) ? st : a.peer, to = is_send(a.kind) ? a.peer : st;
      pending[{static_cast<int>(send), a.micro_batch, a.chunk, from, to}] +=
          is_send(a.kind) ? 1 : -1;
    }
    for (int mb = 0; mb < m; ++mb)
      for (int c = 0; c < v; ++c) {
        auto& pos = seen[{mb, c}];
        auto at = [&](ActionKind k) { return pos.count(k) ? pos[k] : -1; };
        const int f = at(ActionKind::Forward), b = at(ActionKind::Backward);
        const int bi = at(ActionKind::BackwardInput), w = at(ActionKind::BackwardWeight);
        const std::string unit = fmt::format("micro-batch {} chunk {}", mb, c);
        if (f < 0) out.push_back(fmt::format("stage {}: no forward of {}", st, unit));
        const bool split = bi >= 0 || w >= 0;
        if (split && b >= 0)
          out.push_back(fmt::format("stage {}: {} has both B and B/W", st, unit));
        if (!split && b < 0) out.push_back(fmt::format("stage {}: no backward of {}", st, unit));
        if (split && (bi < 0 || w < 0))
          out.push_back(fmt::format("stage {}: {} lacks its B or its W", st, unit));
        const int first_bwd = split ? bi : b;
        if (f >= 0 && first_bwd >= 0 && first_bwd < f)
          out.push_back(fmt::format("stage {}: backward of {} before its forward", st, unit));
        if (bi >= 0 && w >= 0 && w < bi)
          out.push_back(fmt::format("stage {}: W of {} before its B", st, unit));
      }
  }
  for (const auto& [key, n] : pending) {
    if (n == 0) continue;
    const auto [kind, mb, c, from, to] = key;
    const Action a{static_cast<ActionKind>(kind), mb, c, to};
    out.push_back(fmt::format("{} from stage {} to stage {}: {} {} unmatched",
                              format_action(a, true), from, to, std::abs(n),
                              n > 0 ? "send(s)" : "receive(s)"));
  }
  return out;
}

std::vector<int> peak_in_flight(const Schedule& s, bool release_at_weight) {
  std::vector<int> peak;
  for (const auto& list : s.stages) {
    int held = 0, top = 0;
    for (const Action& a : list) {
      if (a.kind == ActionKind::Forward) top = std::max(top, ++held);
      const bool release = a.kind == ActionKind::Backward ||
                           (a.kind == ActionKind::BackwardInput && !release_at_weight) ||
                           (a.kind == ActionKind::BackwardWeight && release_at_weight);
      if (release) --held;
    }
    peak.push_back(top);
  }
  return peak;
}

}  // namespace parallm::pipeline
