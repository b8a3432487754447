// Per-step metrics: one JSON object per line (JSONL), written by one rank with
// global values. Fields follow DESIGN.md "Formats": step, loss, lr, grad_norm,
// tokens_per_s, tflops, mfu, memory by tag, ...
#pragma once
#include <nlohmann/json.hpp>

#include <fstream>
#include <string>

#include "tensor/allocator.h"

namespace parallm {

class MetricsWriter {
 public:
  MetricsWriter() = default;  // disabled: write() does nothing
  explicit MetricsWriter(const std::string& path);
  void write(const nlohmann::json& record);
  bool enabled() const { return out_.is_open(); }

 private:
  std::ofstream out_;
};

// {"parameter": {"current": .., "peak": ..}, ...} for every tag.
nlohmann::json memory_json(const MemStats& s);

}  // namespace parallm
