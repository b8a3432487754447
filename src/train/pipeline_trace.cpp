// Gathering timelines to rank 0 and writing the Chrome trace and the SVG.
#include "train/pipeline_trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "trace/chrome_trace.h"
#include "trace/svg_timeline.h"

namespace parallm {
namespace {

constexpr int kFields = 6;  // kind, micro-batch, chunk, start, end, step

std::string event_name(const trace::Event& e) {
  std::string p;
  switch (e.kind) {
    case trace::EventKind::Forward:
      p = "F";
      break;
    case trace::EventKind::Backward:
      p = "B";
      break;
    case trace::EventKind::BackwardInput:
      p = "B";
      break;
    case trace::EventKind::BackwardWeight:
      p = "W";
      break;
    case trace::EventKind::Send:
      p = "send ";
      break;
    case trace::EventKind::Recv:
      p = "recv ";
      break;
    default:
      p = "?";
      break;
  }
  std::string s = p + std::to_string(e.micro_batch);
  if (e.chunk >= 0) s += fmt::format("c{}", e.chunk);
  return s;
}

}  // namespace

trace::Timeline stage_timeline(const std::vector<trace::Event>& events, int stages) {
  trace::Timeline t;
  for (int s = 0; s < stages; ++s) t.rank_names.push_back(fmt::format("stage {}", s));
  t.events = events;
  return t;
}

void write_pipeline_pictures(comm::Communicator& world, const RankGrid& grid,
                             const PipelineStep& step, const std::string& title,
                             const std::string& trace_path, const std::string& svg_path) {
  if (trace_path.empty() && svg_path.empty()) return;
  const auto& ev = step.events();
  std::vector<double> mine;
  mine.reserve(ev.size() * kFields);
  for (size_t i = 0; i < ev.size(); ++i) {
    const trace::Event& e = ev[i];
    mine.insert(mine.end(), {static_cast<double>(e.kind), static_cast<double>(e.micro_batch),
                             static_cast<double>(e.chunk), e.start_us, e.end_us,
                             static_cast<double>(step.event_steps()[i])});
  }
  const int n = world.size(), me = world.rank();
  int64_t count = static_cast<int64_t>(mine.size());
  std::vector<int64_t> counts(n);
  world.gather(&count, counts.data(), 1, DType::I64, 0);
  if (me != 0) {
    if (count > 0) world.send(mine.data(), mine.size(), DType::F64, 0, 77);
    return;
  }
  trace::Timeline all;                                    // every rank, every step
  std::map<int64_t, std::vector<trace::Event>> pipeline;  // rank 0's pipeline, by step
  for (int r = 0; r < n; ++r) {
    const GridCoord c = grid.coord(r);
    all.rank_names.push_back(
        fmt::format("rank {} (pp {}, dp {}, tp {})", r, c.pp_rank, c.dp_rank, c.tp_rank));
    std::vector<double> buf;
    if (r == 0)
      buf = mine;
    else if (counts[r] > 0) {
      buf.resize(static_cast<size_t>(counts[r]));
      world.recv(buf.data(), buf.size(), DType::F64, r, 77);
    }
    const bool in_pipeline = c.tp_rank == 0 && c.cp_rank == 0 && c.dp_rank == 0;
    for (size_t k = 0; k + kFields <= buf.size(); k += kFields) {
      trace::Event e;
      e.kind = static_cast<trace::EventKind>(static_cast<int>(buf[k]));
      e.micro_batch = static_cast<int>(buf[k + 1]);
      e.chunk = static_cast<int>(buf[k + 2]);
      e.start_us = buf[k + 3];
      e.end_us = buf[k + 4];
      e.name = event_name(e);
      e.rank = r;
      all.events.push_back(e);
      if (in_pipeline) {
        e.rank = c.pp_rank;
        pipeline[static_cast<int64_t>(buf[k + 5])].push_back(e);
      }
    }
  }
  // Times from the job's first event, so the trace opens at zero.
  double origin = all.events.empty() ? 0.0 : all.events.front().start_us;
  for (const auto& e : all.events) origin = std::min(origin, e.start_us);
  for (auto& e : all.events) e.start_us -= origin, e.end_us -= origin;
  if (!trace_path.empty()) trace::write_chrome_trace(all, trace_path);
  if (svg_path.empty() || pipeline.empty()) return;
  // The step with the shortest span after the first (warm-up): on a shared
  // machine the least disturbed by other processes; the trace has them all.
  auto span = [](const std::vector<trace::Event>& v) {
    double lo = v.front().start_us, hi = v.front().end_us;
    for (const auto& e : v) lo = std::min(lo, e.start_us), hi = std::max(hi, e.end_us);
    return hi - lo;
  };
  auto best = pipeline.begin();
  for (auto it = std::next(best); it != pipeline.end(); ++it)
    if (best == pipeline.begin() || span(it->second) < span(best->second)) best = it;
  trace::write_timeline_svg(
      stage_timeline(best->second, grid.sizes().pp),
      trace::SvgOptions{
          .title = fmt::format("{}, step {} of {}", title, best->first + 1, pipeline.size())},
      svg_path);
}

}  // namespace parallm
