// Data blends in Megatron-LM's syntax: `--data A B ...` is one stream (the
// sources concatenated); `--data 0.7 A 0.3 B` is a blend, weights normalised
// to sum 1. BlendSchedule assigns global sample s to a source and to that
// source's own sample number with Megatron's BlendedDataset rule: s goes to
// the source whose count lags its share w_d * max(s, 1) the most (lowest
// index on ties). Invariant: the assignment of s depends only on the weights
// and on s, never on the layout or on which samples were asked for before.
#pragma once
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace parallm {

struct DataSpec {
  std::vector<double> weights;  // normalised; empty when not a blend
  // Blend: one entry per weight (each path may be a glob). Otherwise one
  // entry holding every path in stream order.
  std::vector<std::vector<std::string>> sources;

  bool blended() const { return !weights.empty(); }
};

// True when entries use the blend syntax (the first entry is a number that
// names no file); the paths are then the entries at odd indices.
bool is_data_blend(const std::vector<std::string>& entries);

// Throws for a malformed blend (odd count, a weight that is not a positive
// number, a missing path) naming the entry at fault.
DataSpec parse_data_spec(const std::vector<std::string>& entries);

class BlendSchedule {
 public:
  explicit BlendSchedule(std::vector<double> weights);  // normalised, > 0

  struct Pick {
    int source;
    int64_t source_sample;
  };
  // Thread-safe; extends a cached prefix of the assignment as needed
  // (10 bytes per sample up to the largest sample asked for).
  Pick pick(int64_t sample) const;
  const std::vector<double>& weights() const { return weights_; }

 private:
  std::vector<double> weights_;
  mutable std::mutex mu_;
  mutable std::vector<uint16_t> source_;
  mutable std::vector<int64_t> source_sample_;
  mutable std::vector<int64_t> counts_;  // samples assigned to each source so far
};

}  // namespace parallm
