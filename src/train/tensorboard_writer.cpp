#include "train/tensorboard_writer.h"

#include <unistd.h>

#include <chrono>
#include <filesystem>

#include "base/error.h"
#include "train/tf_event.h"

namespace parallm {

namespace {

double wall_seconds() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

void flatten(const nlohmann::json& j, const std::string& name,
             std::vector<std::pair<std::string, float>>& out) {
  if (j.is_number() || j.is_boolean()) {
    out.emplace_back(name, j.is_boolean() ? (j.get<bool>() ? 1.0f : 0.0f) : j.get<float>());
  } else if (j.is_object()) {
    for (const auto& [k, v] : j.items()) flatten(v, name.empty() ? k : name + "/" + k, out);
  } else if (j.is_array()) {
    for (size_t i = 0; i < j.size(); ++i) flatten(j[i], name + "/" + std::to_string(i), out);
  }
}

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "localhost";
  return buf;
}

}  // namespace

std::vector<std::pair<std::string, float>> record_scalars(const nlohmann::json& record) {
  std::vector<std::pair<std::string, float>> out;
  for (const auto& [k, v] : record.items())
    if (k != "step") flatten(v, k, out);
  return out;
}

TensorBoardWriter::TensorBoardWriter(const std::string& dir, int64_t first_step) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  PX_CHECK(!ec && fs::is_directory(dir), "cannot create the TensorBoard directory '{}': {}", dir,
           ec.message());
  const double now = wall_seconds();
  // TensorBoard's own naming; the last number keeps two files of one second
  // and one process (a restart inside a test) apart.
  const std::string stem = "events.out.tfevents." + std::to_string(static_cast<int64_t>(now)) +
                           "." + host_name() + "." + std::to_string(getpid()) + ".";
  for (int n = 0;; ++n) {
    path_ = (fs::path(dir) / (stem + std::to_string(n))).string();
    if (!fs::exists(path_)) break;
  }
  out_.open(path_, std::ios::out | std::ios::binary | std::ios::trunc);
  PX_CHECK(out_.is_open(), "cannot open TensorBoard event file '{}' for writing", path_);
  append(tfevent::file_version_event(now));
  if (first_step > 0) append(tfevent::session_start_event(now, first_step));
}

void TensorBoardWriter::append(const std::string& event) {
  out_ << tfevent::tf_record(event);
  out_.flush();  // a crash must not lose finished steps, as in the JSONL
}

void TensorBoardWriter::write(const nlohmann::json& record) {
  if (!out_.is_open()) return;
  append(tfevent::scalars_event(wall_seconds(), record.at("step").get<int64_t>(),
                                record_scalars(record)));
}

}  // namespace parallm
