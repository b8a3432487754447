// Reading tokenizer.json fields with errors that name the file, the field path
// and the value: every accessor takes `where` ("DIR/tokenizer.json: model")
// and says what it expected. Invariant: no accessor lets a nlohmann exception
// escape; a wrong type is a parallm::Error like any other bad input.
#pragma once
#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

#include "base/error.h"

namespace parallm {

using Json = nlohmann::json;

inline std::string json_brief(const Json& j) {
  std::string s = j.dump(-1, ' ', false, Json::error_handler_t::replace);
  return s.size() > 80 ? s.substr(0, 77) + "..." : s;
}

inline const Json& json_field(const Json& obj, std::string_view key, std::string_view where) {
  PX_CHECK(obj.is_object(), "{}: expected an object, got {}", where, json_brief(obj));
  auto it = obj.find(key);
  PX_CHECK(it != obj.end(), "{}: missing field '{}'", where, key);
  return *it;
}

inline std::string json_string(const Json& obj, std::string_view key, std::string_view where) {
  const Json& v = json_field(obj, key, where);
  PX_CHECK(v.is_string(), "{}.{}: expected a string, got {}", where, key, json_brief(v));
  return v.get<std::string>();
}

inline bool json_bool(const Json& obj, std::string_view key, std::string_view where, bool dflt) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return dflt;
  PX_CHECK(it->is_boolean(), "{}.{}: expected true or false, got {}", where, key, json_brief(*it));
  return it->get<bool>();
}

inline int64_t json_int(const Json& obj, std::string_view key, std::string_view where) {
  const Json& v = json_field(obj, key, where);
  PX_CHECK(v.is_number_integer(), "{}.{}: expected an integer, got {}", where, key, json_brief(v));
  return v.get<int64_t>();
}

// The "type" of a component object.
inline std::string json_type(const Json& obj, std::string_view where) {
  return json_string(obj, "type", where);
}

// A "pattern" field: {"String": "..."} or {"Regex": "..."}; returns the regex
// source (a String is escaped to match literally).
std::string json_pattern(const Json& obj, std::string_view where);

}  // namespace parallm
