// ApiError bodies (see api_error.h).
#include "infer/serve/api_error.h"

namespace parallm::serve {

nlohmann::json error_body(const std::string& message, const std::string& type,
                          const std::string& param, const std::string& code) {
  nlohmann::json e{{"message", message}, {"type", type}, {"param", nullptr}, {"code", nullptr}};
  if (!param.empty()) e["param"] = param;
  if (!code.empty()) e["code"] = code;
  return {{"error", e}};
}

nlohmann::json error_body(const ApiError& e) {
  return error_body(e.what(), e.type, e.param, e.code);
}

std::string error_type_for_status(int status) {
  switch (status) {
    case 401:
      return "authentication_error";
    case 403:
      return "permission_error";
    case 404:
      return "not_found_error";
    case 413:
      return "request_too_large";
    case 429:
      return "rate_limit_error";
    default:
      return status >= 500 ? "server_error" : "invalid_request_error";
  }
}

}  // namespace parallm::serve
