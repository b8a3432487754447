// Chrome trace writer, through nlohmann::json so names are escaped.
#include "trace/chrome_trace.h"

#include <fstream>
#include <nlohmann/json.hpp>

#include "base/error.h"

namespace parallm::trace {

std::string chrome_trace_json(const Timeline& t) {
  using nlohmann::json;
  json events = json::array();
  for (size_t r = 0; r < t.rank_names.size(); ++r) {
    const int pid = static_cast<int>(r);
    events.push_back({{"name", "process_name"},
                      {"ph", "M"},
                      {"pid", pid},
                      {"tid", 0},
                      {"args", {{"name", t.rank_names[r]}}}});
    events.push_back({{"name", "process_sort_index"},
                      {"ph", "M"},
                      {"pid", pid},
                      {"tid", 0},
                      {"args", {{"sort_index", pid}}}});
    events.push_back({{"name", "thread_name"},
                      {"ph", "M"},
                      {"pid", pid},
                      {"tid", 0},
                      {"args", {{"name", "compute"}}}});
    events.push_back({{"name", "thread_name"},
                      {"ph", "M"},
                      {"pid", pid},
                      {"tid", 1},
                      {"args", {{"name", "communication"}}}});
  }
  for (const Event& e : t.events) {
    json args = json::object();
    if (e.micro_batch >= 0) args["micro_batch"] = e.micro_batch;
    if (e.chunk >= 0) args["chunk"] = e.chunk;
    events.push_back({{"name", e.name},
                      {"cat", event_kind_name(e.kind)},
                      {"ph", "X"},
                      {"ts", e.start_us},
                      {"dur", e.end_us - e.start_us},
                      {"pid", e.rank},
                      {"tid", is_compute(e.kind) ? 0 : 1},
                      {"args", args}});
  }
  json doc = {{"traceEvents", events}, {"displayTimeUnit", "ms"}};
  return doc.dump(1);
}

void write_chrome_trace(const Timeline& t, const std::string& path) {
  std::ofstream out(path, std::ios::binary);
  PX_CHECK(out.good(), "cannot open trace file '{}' for writing", path);
  out << chrome_trace_json(t) << "\n";
  PX_CHECK(out.good(), "failed writing trace file '{}'", path);
}

}  // namespace parallm::trace
