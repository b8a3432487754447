// The best GEMM peak this machine has shown, kept in a small JSON file
// (cache_dir/gemm_peak.json: {"<cpu> | <threads> threads | <precision>":
// FLOP/s}). MFU's denominator is the best of the start-up measurement and
// every earlier one, so one measurement disturbed by other work on the
// machine does not lower it (which would print MFU above 100%).
#pragma once
#include <string>

namespace parallm {

// The CPU model as /proc/cpuinfo names it ("unknown cpu" elsewhere).
std::string cpu_model_name();

class GemmPeakCache {
 public:
  explicit GemmPeakCache(std::string path) : path_(std::move(path)) {}
  // The best peak recorded under key; 0 when none, or the file is missing or
  // unreadable (a cache never stops a run).
  double best(const std::string& key) const;
  // Keeps flops under key when it beats the recorded one; written atomically.
  // Returns false when the file cannot be written.
  bool record(const std::string& key, double flops) const;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace parallm
