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
  // first_step > 0 (a resumed run): keeps the file's records of steps before
  // first_step and appends after them, so the file reads as one run (records
  // of steps the resumed run repeats, written after the checkpoint, are
  // dropped). first_step 0: a new file.
  explicit MetricsWriter(const std::string& path, int64_t first_step = 0);
  void write(const nlohmann::json& record);
  bool enabled() const { return out_.is_open(); }

 private:
  std::ofstream out_;
};

// {"parameter": {"current": .., "peak": ..}, ...} for every tag.
nlohmann::json memory_json(const MemStats& s);

}  // namespace parallm
