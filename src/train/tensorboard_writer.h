// TensorBoard event files beside the JSONL metrics (`--tensorboard DIR`):
// every numeric field of a step's metrics record becomes a scalar of the same
// name, nested keys joined by '/' ("memory/activation/peak",
// "comm_ms_by_group/tp", "val_loss"), at the record's step, so the two files
// always say the same thing. Written by the rank that writes the metrics.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

namespace parallm {

class TensorBoardWriter {
 public:
  TensorBoardWriter() = default;  // disabled: write() does nothing
  // Creates DIR and a new events.out.tfevents.<time>.<host>.<pid>.<n> file in
  // it. first_step > 0 (a resumed run) starts with a session-start event, so
  // TensorBoard drops what an interrupted earlier run logged for later steps.
  TensorBoardWriter(const std::string& dir, int64_t first_step);
  void write(const nlohmann::json& record);
  bool enabled() const { return out_.is_open(); }
  const std::string& path() const { return path_; }

 private:
  void append(const std::string& event);
  std::ofstream out_;
  std::string path_;
};

// The scalars of one metrics record: every number or boolean leaf except
// "step", named by its key path; array elements by index ("moe/expert_load/3").
std::vector<std::pair<std::string, float>> record_scalars(const nlohmann::json& record);

}  // namespace parallm
