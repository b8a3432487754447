#include "train/metrics.h"

#include <filesystem>

#include "base/error.h"

namespace parallm {

MetricsWriter::MetricsWriter(const std::string& path) {
  auto dir = std::filesystem::path(path).parent_path();
  if (!dir.empty()) std::filesystem::create_directories(dir);
  out_.open(path, std::ios::out | std::ios::trunc);
  PX_CHECK(out_.is_open(), "cannot open metrics file '{}' for writing", path);
}

void MetricsWriter::write(const nlohmann::json& record) {
  if (!out_.is_open()) return;
  out_ << record.dump() << '\n';
  out_.flush();  // a crash must not lose finished steps
}

nlohmann::json memory_json(const MemStats& s) {
  nlohmann::json j;
  for (size_t i = 0; i < kNumMemTags; ++i)
    j[std::string(mem_tag_name(static_cast<MemTag>(i)))] = {{"current", s.current[i]},
                                                             {"peak", s.peak[i]}};
  j["total"] = {{"current", s.total_current}, {"peak", s.total_peak}};
  return j;
}

}  // namespace parallm
