// Per-step metrics: one JSON object per line (JSONL), written by one rank with
// global values. Fields follow DESIGN.md "Formats": step, loss, lr, grad_norm,
// tokens_per_s, tflops, mfu, memory by tag, ...; with more than one rank
// and the straggler monitor on, every rank's step, compute and
// communication times (RankTimes, one array entry per world rank).
#pragma once
#include <nlohmann/json.hpp>

#include <fstream>
#include <string>
#include <vector>

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

// One rank's times for one step, in ms. comm_ms: blocked inside
// communication calls on every group the step used; reduce_ms: the part of
// it in the gradient-reduction group (dp, or dp x cp), where the step ends;
// peer_wait_ms: the part the communicators know was spent before a peer had
// posted (skew; ring attention measures it); compute_ms = step_ms - comm_ms:
// everything else (kernels, the optimizer, polls of overlapped transfers).
struct RankTimes {
  double step_ms = 0.0, compute_ms = 0.0, comm_ms = 0.0, reduce_ms = 0.0, peer_wait_ms = 0.0;
};

// {"step_ms": [rank 0, rank 1, ...], "compute_ms": [...], "comm_ms": [...],
// "reduce_ms": [...], "peer_wait_ms": [...]}: the record's "ranks" object.
nlohmann::json ranks_json(const std::vector<RankTimes>& ranks);

// {"parameter": {"current": .., "peak": ..}, ...} for every tag.
nlohmann::json memory_json(const MemStats& s);

}  // namespace parallm
