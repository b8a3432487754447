// value_from_json_text (see template_json.h): parsed with nlohmann's
// ordered_json, whose objects keep insertion order.
#include "infer/chat/template_json.h"

#include <nlohmann/json.hpp>

#include "base/error.h"

namespace parallm::chat {

namespace {
Value convert(const nlohmann::ordered_json& j) {
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null:
      return Value::none();
    case nlohmann::ordered_json::value_t::boolean:
      return Value::boolean(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer:
      return Value::integer(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned:
      return Value::integer(static_cast<int64_t>(j.get<uint64_t>()));
    case nlohmann::ordered_json::value_t::number_float:
      return Value::real(j.get<double>());
    case nlohmann::ordered_json::value_t::string:
      return Value::string(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      List items;
      for (const auto& e : j) items.push_back(convert(e));
      return Value::list(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
      Dict items;
      for (const auto& [k, v] : j.items()) items.emplace_back(k, convert(v));
      return Value::dict(std::move(items));
    }
    default:
      break;
  }
  PX_FAIL("chat template: JSON value of type {} cannot be passed to a template", j.type_name());
}
}  // namespace

Value value_from_json_text(std::string_view text) {
  const nlohmann::ordered_json j = nlohmann::ordered_json::parse(text, nullptr, false);
  PX_CHECK(!j.is_discarded(), "chat template: data for the template is not valid JSON: {}",
           std::string(text.substr(0, 200)));
  return convert(j);
}

}  // namespace parallm::chat
