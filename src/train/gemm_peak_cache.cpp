#include "train/gemm_peak_cache.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

#include "base/atomic_file.h"
#include "base/error.h"

namespace parallm {

namespace {

nlohmann::json read_cache(const std::string& path) {
  std::ifstream in(path);
  if (!in.is_open()) return nlohmann::json::object();
  auto j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  return j.is_object() ? j : nlohmann::json::object();
}

}  // namespace

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) != 0) continue;
    const auto colon = line.find(':');
    if (colon != std::string::npos && colon + 2 <= line.size()) return line.substr(colon + 2);
  }
  return "unknown cpu";
}

double GemmPeakCache::best(const std::string& key) const {
  const auto j = read_cache(path_);
  const auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : 0.0;
}

bool GemmPeakCache::record(const std::string& key, double flops) const {
  auto j = read_cache(path_);
  if (j.contains(key) && j[key].is_number() && j[key].get<double>() >= flops) return true;
  j[key] = flops;
  try {
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(path_).parent_path(), ec);
    write_file_atomically(path_, [&](std::ostream& out) { out << j.dump(2) << '\n'; });
  } catch (const std::exception&) {
    return false;  // a read-only home: the run goes on with the measured peak
  }
  return true;
}

}  // namespace parallm
