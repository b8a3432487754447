// Typed access to the optional fields of a JSON request object, for the
// OpenAI request parsers: each getter returns nullopt when the field is
// absent or null, the value when it has the right type and range, and
// throws ApiError 400 naming the field (as `param`) and what was expected
// otherwise. Integers must be JSON integers (2.0 and true are not).
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace parallm::serve {

class RequestFields {
 public:
  explicit RequestFields(const nlohmann::json& object, std::string prefix = "")
      : j_(object), prefix_(std::move(prefix)) {}

  // The field or nullptr (absent or null).
  const nlohmann::json* find(const std::string& name) const;
  std::optional<bool> boolean(const std::string& name) const;
  std::optional<int64_t> integer(const std::string& name, int64_t lo, int64_t hi) const;
  // Any JSON number in [lo, hi] (NaN cannot be written in JSON).
  std::optional<double> number(const std::string& name, double lo, double hi) const;
  std::optional<std::string> string(const std::string& name) const;

  // prefix + name, as it appears in messages ("messages[0].role").
  std::string path(const std::string& name) const { return prefix_ + name; }
  [[noreturn]] void fail(const std::string& name, const std::string& message) const;

 private:
  const nlohmann::json& j_;
  std::string prefix_;
};

// "a string", "an integer", ... for messages naming what was given.
std::string json_type_name(const nlohmann::json& v);

}  // namespace parallm::serve
