// RequestLog (see request_log.h).
#include "infer/serve/request_log.h"

#include "base/error.h"

namespace parallm::serve {

RequestLog::RequestLog(const std::string& path) {
  if (path.empty()) return;
  out_.open(path, std::ios::app);
  PX_CHECK(out_.is_open(), "cannot open the request log '{}' for writing", path);
}

void RequestLog::write(const nlohmann::json& entry) {
  if (!enabled()) return;
  const std::string line = entry.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::lock_guard<std::mutex> lock(mu_);
  out_ << line << '\n' << std::flush;
}

}  // namespace parallm::serve
