// ApiError: a request the server refuses, with the HTTP status and the
// OpenAI error object it answers with:
//   {"error": {"message", "type", "param", "code"}}
// Invariant: bad input always becomes an ApiError with a 4xx status; a 500
// means a bug in the server, never a bad request.
#pragma once
#include <nlohmann/json.hpp>

#include <stdexcept>
#include <string>

namespace parallm::serve {

struct ApiError : std::runtime_error {
  ApiError(int status, std::string message, std::string param = "",
           std::string type = "invalid_request_error", std::string code = "")
      : std::runtime_error(message),
        status(status),
        param(std::move(param)),
        type(std::move(type)),
        code(std::move(code)) {}
  int status;
  std::string param;  // the request field at fault ("" when none)
  std::string type;
  std::string code;
};

// The error body; empty param or code become null.
nlohmann::json error_body(const std::string& message, const std::string& type,
                          const std::string& param, const std::string& code);
nlohmann::json error_body(const ApiError& e);

// The OpenAI error type that goes with a status (400 -> invalid_request_error,
// 404 -> not_found_error, 429 -> rate_limit_error, 5xx -> server_error...).
std::string error_type_for_status(int status);

}  // namespace parallm::serve
