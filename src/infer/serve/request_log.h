// RequestLog: the server's JSONL request log (--log-file), one object per
// answered completion request: time, id, endpoint, status, stream, n,
// prompt and completion tokens, time to first token, mean inter-token
// latency, end-to-end latency, finish reasons, and the error message of a
// refused one. Thread-safe; each line is written whole and flushed.
#pragma once
#include <nlohmann/json.hpp>

#include <fstream>
#include <mutex>
#include <string>

namespace parallm::serve {

class RequestLog {
 public:
  explicit RequestLog(const std::string& path);  // "" logs nothing
  bool enabled() const { return out_.is_open(); }
  void write(const nlohmann::json& entry);

 private:
  std::mutex mu_;
  std::ofstream out_;
};

}  // namespace parallm::serve
