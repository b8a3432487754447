#include "train/metrics.h"

#include <filesystem>
#include <fstream>

#include "base/error.h"

namespace parallm {

MetricsWriter::MetricsWriter(const std::string& path, int64_t first_step) {
  auto dir = std::filesystem::path(path).parent_path();
  if (!dir.empty()) std::filesystem::create_directories(dir);
  std::string kept;
  if (first_step > 0) {
    std::ifstream in(path);
    for (std::string line; std::getline(in, line);) {
      const auto rec = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (rec.is_object() && rec.contains("step") && rec["step"].is_number_integer() &&
          rec["step"].get<int64_t>() < first_step)
        kept += line + '\n';
    }
  }
  out_.open(path, std::ios::out | std::ios::trunc);
  PX_CHECK(out_.is_open(), "cannot open metrics file '{}' for writing", path);
  out_ << kept;
  out_.flush();
}

void MetricsWriter::write(const nlohmann::json& record) {
  if (!out_.is_open()) return;
  out_ << record.dump() << '\n';
  out_.flush();  // a crash must not lose finished steps
}

nlohmann::json ranks_json(const std::vector<RankTimes>& ranks) {
  nlohmann::json j;
  const auto field = [&](const char* name, double RankTimes::*of) {
    nlohmann::json a = nlohmann::json::array();
    for (const RankTimes& r : ranks) a.push_back(r.*of);
    j[name] = std::move(a);
  };
  field("step_ms", &RankTimes::step_ms);
  field("compute_ms", &RankTimes::compute_ms);
  field("comm_ms", &RankTimes::comm_ms);
  field("reduce_ms", &RankTimes::reduce_ms);
  field("peer_wait_ms", &RankTimes::peer_wait_ms);
  return j;
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
