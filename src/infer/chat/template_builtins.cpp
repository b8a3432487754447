// Filters, tests and methods of the chat-template subset (see
// template_builtins.h); each follows jinja2/filters.py, jinja2/tests.py or
// the Python str/dict method of the same name.
#include "infer/chat/template_builtins.h"

#include <algorithm>
#include <array>

#include "base/error.h"
#include "infer/chat/template_text.h"

namespace parallm::chat {
namespace {

constexpr std::array<std::string_view, 18> kFilters = {
    "trim",    "length", "count", "upper", "lower", "capitalize", "tojson", "string", "join",
    "default", "d",      "first", "last",  "list",  "items",      "safe",   "select", "reject"};
constexpr std::array<std::string_view, 18> kTests = {
    "defined",  "undefined", "none", "string",      "number",  "integer",
    "float",    "boolean",   "true", "false",       "mapping", "sequence",
    "iterable", "odd",       "even", "divisibleby", "equalto", "eq"};
constexpr std::array<std::string_view, 14> kMethods = {
    "strip",    "lstrip", "rstrip",  "upper", "lower", "capitalize", "startswith",
    "endswith", "split",  "replace", "get",   "items", "keys",       "values"};
constexpr std::array<std::string_view, 3> kFunctions = {"raise_exception", "namespace", "range"};

template <size_t N>
bool contains(const std::array<std::string_view, N>& table, std::string_view name) {
  return std::find(table.begin(), table.end(), name) != table.end();
}

// The argument at position i or keyword name, else fallback.
const Value* arg(const std::vector<Value>& args, const Kwargs& kwargs, size_t i,
                 std::string_view name) {
  if (i < args.size()) return &args[i];
  for (const auto& [k, v] : kwargs)
    if (k == name) return &v;
  return nullptr;
}

std::optional<std::string> opt_string(const Value* v, const std::string& what, int line) {
  if (!v || v->is_none()) return std::nullopt;
  PX_CHECK(v->is_string(), "chat template: {} expects a string argument, got {} at line {}", what,
           v->type_name(), line);
  return v->as_string();
}

std::string cased(std::optional<std::string> s, const std::string& what, int line) {
  PX_CHECK(s.has_value(),
           "chat template: {} supports ASCII text only (Python's Unicode case tables are not "
           "carried) at line {}",
           what, line);
  return *s;
}

List items_of(const Value& v) {
  List out;
  for (const auto& [k, item] : v.as_dict()) out.push_back(Value::list({Value::string(k), item}));
  return out;
}

// Python's list(x) for the iterables a template meets.
List to_list(const Value& v, const std::string& what, int line) {
  switch (v.kind()) {
    case ValueKind::List:
      return v.as_list();
    case ValueKind::Dict: {
      List keys;
      for (const auto& [k, item] : v.as_dict()) keys.push_back(Value::string(k));
      return keys;
    }
    case ValueKind::String: {
      List chars;
      for (char32_t cp : utf8_decode(v.as_string())) {
        std::string one;
        utf8_append(one, cp);
        chars.push_back(Value::string(one));
      }
      return chars;
    }
    case ValueKind::Undefined:
      return {};
    default:
      PX_FAIL("chat template: {}: '{}' object is not iterable at line {}", what, v.type_name(),
              line);
  }
}

int64_t length_of(const Value& v, int line) {
  switch (v.kind()) {
    case ValueKind::String:
      return python_len(v.as_string());
    case ValueKind::List:
      return int64_t(v.as_list().size());
    case ValueKind::Dict:
      return int64_t(v.as_dict().size());
    case ValueKind::Undefined:
      return 0;
    default:
      PX_FAIL("chat template: length: object of type '{}' has no len() at line {}", v.type_name(),
              line);
  }
}

}  // namespace

bool has_filter(std::string_view name) { return contains(kFilters, name); }
bool has_test(std::string_view name) { return contains(kTests, name); }
bool has_method(std::string_view name) { return contains(kMethods, name); }
bool has_function(std::string_view name) { return contains(kFunctions, name); }

Value apply_filter(const std::string& name, const Value& input, const std::vector<Value>& args,
                   const Kwargs& kwargs, int line) {
  if (name == "trim") {
    const Value* chars = arg(args, kwargs, 0, "chars");
    return Value::string(
        python_strip(input.to_str(), opt_string(chars, "trim", line), StripSide::Both));
  }
  if (name == "length" || name == "count") return Value::integer(length_of(input, line));
  if (name == "upper") return Value::string(cased(ascii_upper(input.to_str()), "upper", line));
  if (name == "lower") return Value::string(cased(ascii_lower(input.to_str()), "lower", line));
  if (name == "capitalize")
    return Value::string(cased(ascii_capitalize(input.to_str()), "capitalize", line));
  if (name == "string" || name == "safe") return Value::string(input.to_str());
  if (name == "tojson") {
    JsonOptions options;
    if (const Value* indent = arg(args, kwargs, 1, "indent"); indent && !indent->is_none()) {
      PX_CHECK(indent->kind() == ValueKind::Int,
               "chat template: tojson indent must be an integer, got {} at line {}",
               indent->type_name(), line);
      options.indent = int(indent->as_int());
    }
    if (const Value* ascii = arg(args, kwargs, 0, "ensure_ascii"))
      PX_CHECK(!ascii->truthy(), "chat template: unsupported tojson(ensure_ascii=true) at line {}",
               line);
    PX_CHECK(!arg(args, kwargs, 2, "separators"),
             "chat template: unsupported tojson(separators=...) at line {}", line);
    if (const Value* sort = arg(args, kwargs, 3, "sort_keys")) options.sort_keys = sort->truthy();
    return Value::string(to_json(input, options));
  }
  if (name == "join") {
    const Value* sep = arg(args, kwargs, 0, "d");
    const std::string separator = sep ? sep->to_str() : "";
    std::string out;
    bool first = true;
    for (const Value& item : to_list(input, "join", line)) {
      if (!first) out += separator;
      first = false;
      out += item.to_str();
    }
    return Value::string(out);
  }
  if (name == "default" || name == "d") {
    const Value* fallback = arg(args, kwargs, 0, "default_value");
    const Value* boolean = arg(args, kwargs, 1, "boolean");
    const bool use = input.is_undefined() || (boolean && boolean->truthy() && !input.truthy());
    return use ? (fallback ? *fallback : Value::string("")) : input;
  }
  if (name == "first" || name == "last") {
    const List items = to_list(input, name, line);
    if (items.empty()) return Value::undefined("No " + name + " item, sequence was empty.");
    return name == "first" ? items.front() : items.back();
  }
  if (name == "list") return Value::list(to_list(input, "list", line));
  if (name == "items") {
    if (input.is_undefined()) return Value::list({});
    PX_CHECK(input.kind() == ValueKind::Dict,
             "chat template: items: can only get item pairs from a mapping, got {} at line {}",
             input.type_name(), line);
    return Value::list(items_of(input));
  }
  if (name == "select" || name == "reject") {
    // Jinja's select(test, args...) / reject(...): no test keeps the truthy ones.
    const bool keep = name == "select";
    List out;
    for (const Value& item : to_list(input, name, line)) {
      bool pass = item.truthy();
      if (!args.empty()) {
        PX_CHECK(args[0].is_string() && has_test(args[0].as_string()),
                 "chat template: {} needs the name of a supported test at line {}", name, line);
        pass = apply_test(args[0].as_string(), item, {args.begin() + 1, args.end()}, line);
      }
      if (pass == keep) out.push_back(item);
    }
    return Value::list(std::move(out));
  }
  PX_FAIL("chat template: unsupported filter '{}' at line {}", name, line);
}

bool apply_test(const std::string& name, const Value& v, const std::vector<Value>& args, int line) {
  const ValueKind k = v.kind();
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.is_none();
  if (name == "string") return v.is_string();
  if (name == "number") return v.is_number();
  if (name == "integer") return k == ValueKind::Int;
  if (name == "float") return k == ValueKind::Float;
  if (name == "boolean") return k == ValueKind::Bool;
  if (name == "true") return k == ValueKind::Bool && v.as_bool();
  if (name == "false") return k == ValueKind::Bool && !v.as_bool();
  if (name == "mapping") return k == ValueKind::Dict;
  if (name == "sequence" || name == "iterable")
    return k == ValueKind::String || k == ValueKind::List || k == ValueKind::Dict ||
           (name == "iterable" && k == ValueKind::Undefined);
  if (name == "equalto" || name == "eq") {
    PX_CHECK(args.size() == 1, "chat template: test '{}' needs one argument at line {}", name,
             line);
    return values_equal(v, args[0]);
  }
  if (name == "odd" || name == "even" || name == "divisibleby") {
    PX_CHECK(k == ValueKind::Int || k == ValueKind::Bool,
             "chat template: test '{}' needs an integer, got {} at line {}", name, v.type_name(),
             line);
    int64_t divisor = 2;
    if (name == "divisibleby") {
      PX_CHECK(args.size() == 1 && args[0].kind() == ValueKind::Int && args[0].as_int() != 0,
               "chat template: divisibleby needs one non-zero integer at line {}", line);
      divisor = args[0].as_int();
    }
    const bool divisible = v.as_int() % divisor == 0;
    return name == "odd" ? !divisible : divisible;
  }
  PX_FAIL("chat template: unsupported test '{}' at line {}", name, line);
}

Value call_method(const Value& receiver, const std::string& name, const std::vector<Value>& args,
                  const Kwargs& kwargs, int line) {
  PX_CHECK(!receiver.is_undefined(), "chat template: {} (calling .{}() at line {})",
           receiver.undefined_hint(), name, line);
  if (receiver.is_string()) {
    const std::string& s = receiver.as_string();
    if (name == "strip" || name == "lstrip" || name == "rstrip") {
      const StripSide side = name == "strip"    ? StripSide::Both
                             : name == "lstrip" ? StripSide::Left
                                                : StripSide::Right;
      return Value::string(
          python_strip(s, opt_string(arg(args, kwargs, 0, "chars"), name, line), side));
    }
    if (name == "upper") return Value::string(cased(ascii_upper(s), "upper", line));
    if (name == "lower") return Value::string(cased(ascii_lower(s), "lower", line));
    if (name == "capitalize") return Value::string(cased(ascii_capitalize(s), "capitalize", line));
    if (name == "startswith" || name == "endswith") {
      const Value* a = arg(args, kwargs, 0, "prefix");
      PX_CHECK(a && (a->is_string() || a->kind() == ValueKind::List),
               "chat template: {} needs a string argument at line {}", name, line);
      const List options = a->is_string() ? List{*a} : a->as_list();
      for (const Value& o : options) {
        const std::string& p = o.to_str();
        if (name == "startswith"
                ? s.compare(0, p.size(), p) == 0 && s.size() >= p.size()
                : s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0)
          return Value::boolean(true);
      }
      return Value::boolean(false);
    }
    if (name == "split") {
      const Value* max = arg(args, kwargs, 1, "maxsplit");
      List parts;
      for (std::string& p : python_split(s, opt_string(arg(args, kwargs, 0, "sep"), "split", line),
                                         max ? max->as_int() : -1))
        parts.push_back(Value::string(std::move(p)));
      return Value::list(std::move(parts));
    }
    if (name == "replace") {
      PX_CHECK(args.size() >= 2 && args[0].is_string() && args[1].is_string(),
               "chat template: replace needs two string arguments at line {}", line);
      return Value::string(python_replace(s, args[0].as_string(), args[1].as_string(),
                                          args.size() > 2 ? args[2].as_int() : -1));
    }
  }
  if (receiver.kind() == ValueKind::Dict) {
    if (name == "get") {
      const Value* key = arg(args, kwargs, 0, "key");
      PX_CHECK(key, "chat template: get needs a key at line {}", line);
      const Value* found = key->is_string() ? receiver.find(key->as_string()) : nullptr;
      if (found) return *found;
      const Value* fallback = arg(args, kwargs, 1, "default");
      return fallback ? *fallback : Value::none();
    }
    if (name == "items") return Value::list(items_of(receiver));
    if (name == "keys" || name == "values") {
      List out;
      for (const auto& [k, v] : receiver.as_dict())
        out.push_back(name == "keys" ? Value::string(k) : v);
      return Value::list(std::move(out));
    }
  }
  PX_FAIL("chat template: unsupported method '{}' on a {} at line {}", name, receiver.type_name(),
          line);
}

}  // namespace parallm::chat
