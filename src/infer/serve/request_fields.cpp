// RequestFields (see request_fields.h).
#include "infer/serve/request_fields.h"

#include <fmt/core.h>

#include "infer/serve/api_error.h"

namespace parallm::serve {

std::string json_type_name(const nlohmann::json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "a boolean";
  if (v.is_number_integer()) return "an integer";
  if (v.is_number()) return "a number";
  if (v.is_string()) return "a string";
  if (v.is_array()) return "an array";
  return "an object";
}

const nlohmann::json* RequestFields::find(const std::string& name) const {
  const auto it = j_.find(name);
  if (it == j_.end() || it->is_null()) return nullptr;
  return &*it;
}

void RequestFields::fail(const std::string& name, const std::string& message) const {
  throw ApiError(400, fmt::format("'{}': {}", path(name), message), path(name));
}

std::optional<bool> RequestFields::boolean(const std::string& name) const {
  const nlohmann::json* v = find(name);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) fail(name, "expected a boolean, got " + json_type_name(*v));
  return v->get<bool>();
}

std::optional<int64_t> RequestFields::integer(const std::string& name, int64_t lo,
                                              int64_t hi) const {
  const nlohmann::json* v = find(name);
  if (!v) return std::nullopt;
  if (!v->is_number_integer()) fail(name, "expected an integer, got " + json_type_name(*v));
  // An unsigned value above INT64_MAX is out of every range we accept.
  if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
    fail(name, fmt::format("is too large, got {}", v->get<uint64_t>()));
  const int64_t x = v->get<int64_t>();
  if (x < lo || x > hi)
    fail(name, hi == INT64_MAX ? fmt::format("must be >= {}, got {}", lo, x)
                               : fmt::format("must be in [{}, {}], got {}", lo, hi, x));
  return x;
}

std::optional<double> RequestFields::number(const std::string& name, double lo, double hi) const {
  const nlohmann::json* v = find(name);
  if (!v) return std::nullopt;
  if (!v->is_number()) fail(name, "expected a number, got " + json_type_name(*v));
  const double x = v->get<double>();
  if (!(x >= lo && x <= hi)) fail(name, fmt::format("must be in [{}, {}], got {}", lo, hi, x));
  return x;
}

std::optional<std::string> RequestFields::string(const std::string& name) const {
  const nlohmann::json* v = find(name);
  if (!v) return std::nullopt;
  if (!v->is_string()) fail(name, "expected a string, got " + json_type_name(*v));
  return v->get<std::string>();
}

}  // namespace parallm::serve
