// parse_data_spec tells a blend from a path list by its first entry (a
// number that names no file), then checks the weight/path pairs.
// BlendSchedule grows its cached assignment in blocks under a mutex; the
// greedy is replayed from sample 0, so every rank builds the same prefix.
#include "data/data_blend.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>

#include "base/error.h"

namespace parallm {

namespace {

constexpr int64_t kScheduleBlock = 4096;

bool parse_number(const std::string& s, double& out) {
  if (s.empty()) return false;
  std::error_code ec;
  if (std::filesystem::exists(s, ec)) return false;  // a file that happens to be named "0.5"
  char* end = nullptr;
  out = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size();
}

}  // namespace

bool is_data_blend(const std::vector<std::string>& entries) {
  double ignored = 0;
  return !entries.empty() && parse_number(entries[0], ignored);
}

DataSpec parse_data_spec(const std::vector<std::string>& entries) {
  PX_CHECK(!entries.empty(), "no data given");
  DataSpec spec;
  double first = 0;
  if (!parse_number(entries[0], first)) {
    spec.sources.push_back(entries);
    return spec;
  }
  std::string joined;  // by hand: fmt::join of strings trips a gcc 12 warning
  for (const std::string& e : entries) joined += (joined.empty() ? "" : " ") + e;
  PX_CHECK(entries.size() % 2 == 0,
           "data blend '{}': expected weight/path pairs (Megatron's syntax: 0.7 PREFIX_A 0.3 "
           "PREFIX_B), got {} entries",
           joined, entries.size());
  double total = 0;
  for (size_t i = 0; i < entries.size(); i += 2) {
    double w = 0;
    PX_CHECK(parse_number(entries[i], w),
             "data blend: entry {} ('{}') should be a weight (a number before each path)", i + 1,
             entries[i]);
    PX_CHECK(std::isfinite(w) && w > 0, "data blend: weight {} for {} must be a positive number",
             entries[i], entries[i + 1]);
    double ignored = 0;
    PX_CHECK(!parse_number(entries[i + 1], ignored),
             "data blend: entry {} ('{}') should be a data path after weight {}", i + 2,
             entries[i + 1], entries[i]);
    spec.weights.push_back(w);
    spec.sources.push_back({entries[i + 1]});
    total += w;
  }
  for (double& w : spec.weights) w /= total;
  return spec;
}

BlendSchedule::BlendSchedule(std::vector<double> weights) : weights_(std::move(weights)) {
  PX_CHECK(!weights_.empty() && weights_.size() <= std::numeric_limits<uint16_t>::max(),
           "data blend: {} sources (expected 1 to {})", weights_.size(),
           std::numeric_limits<uint16_t>::max());
  counts_.assign(weights_.size(), 0);
}

BlendSchedule::Pick BlendSchedule::pick(int64_t sample) const {
  PX_CHECK(sample >= 0, "data blend: sample index {} is negative", sample);
  std::lock_guard<std::mutex> lock(mu_);
  if (sample >= static_cast<int64_t>(source_.size())) {
    const int64_t end = (sample / kScheduleBlock + 1) * kScheduleBlock;
    source_.reserve(static_cast<size_t>(end));
    source_sample_.reserve(static_cast<size_t>(end));
    const int n = static_cast<int>(weights_.size());
    for (int64_t s = static_cast<int64_t>(source_.size()); s < end; ++s) {
      const double at = std::max(static_cast<double>(s), 1.0);
      int best = 0;
      double best_err = weights_[0] * at - static_cast<double>(counts_[0]);
      for (int d = 1; d < n; ++d) {
        const double err = weights_[d] * at - static_cast<double>(counts_[d]);
        if (err > best_err) {
          best_err = err;
          best = d;
        }
      }
      source_.push_back(static_cast<uint16_t>(best));
      source_sample_.push_back(counts_[best]++);
    }
  }
  return {source_[static_cast<size_t>(sample)], source_sample_[static_cast<size_t>(sample)]};
}

}  // namespace parallm
