// Value: what a chat-template expression evaluates to, with the Python
// semantics Jinja2 inherits (truthiness, ==, str(), repr(), json.dumps), so a
// rendering matches transformers byte for byte.
// Invariant: dicts keep insertion order (Python 3.7+ dicts do, and str()/tojson
// print them in that order); lists and dicts are shared and never mutated after
// construction (transformers renders in an *immutable* sandbox); only a
// namespace() is written to, through `set ns.attr = ...`, by every holder alike.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace parallm::chat {

class Value;
using List = std::vector<Value>;
using Dict = std::vector<std::pair<std::string, Value>>;

enum class ValueKind { Undefined, None, Bool, Int, Float, String, List, Dict, Namespace };

class Value {
 public:
  Value() = default;  // undefined
  static Value undefined(std::string hint) {
    Value v;
    v.str_ = std::move(hint);
    return v;
  }
  static Value none() { return Value(ValueKind::None); }
  static Value boolean(bool b) {
    Value v(ValueKind::Bool);
    v.int_ = b;
    return v;
  }
  static Value integer(int64_t i) {
    Value v(ValueKind::Int);
    v.int_ = i;
    return v;
  }
  static Value real(double d) {
    Value v(ValueKind::Float);
    v.float_ = d;
    return v;
  }
  static Value string(std::string s) {
    Value v(ValueKind::String);
    v.str_ = std::move(s);
    return v;
  }
  static Value list(List items) {
    Value v(ValueKind::List);
    v.list_ = std::make_shared<List>(std::move(items));
    return v;
  }
  static Value dict(Dict items) {
    Value v(ValueKind::Dict);
    v.dict_ = std::make_shared<Dict>(std::move(items));
    return v;
  }
  static Value name_space(Dict attrs) {
    Value v = dict(std::move(attrs));
    v.kind_ = ValueKind::Namespace;
    return v;
  }

  ValueKind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == ValueKind::Undefined; }
  bool is_none() const { return kind_ == ValueKind::None; }
  bool is_string() const { return kind_ == ValueKind::String; }
  bool is_number() const {  // Python: bool is an int
    return kind_ == ValueKind::Bool || kind_ == ValueKind::Int || kind_ == ValueKind::Float;
  }
  bool as_bool() const { return int_ != 0; }
  int64_t as_int() const { return int_; }  // also a bool's 0/1
  double as_float() const { return kind_ == ValueKind::Float ? float_ : double(int_); }
  const std::string& as_string() const { return str_; }
  // For undefined values: why it is undefined ("'x' is undefined").
  const std::string& undefined_hint() const { return str_; }
  const List& as_list() const { return *list_; }
  const Dict& as_dict() const { return *dict_; }
  // A namespace's attributes; shared by every copy of the value.
  Dict& namespace_attrs() const { return *dict_; }

  // Dict/namespace lookup; nullptr when absent.
  const Value* find(const std::string& key) const;

  // Python's bool(x); undefined is false.
  bool truthy() const;
  // Python's str(x) as Jinja prints it: undefined prints as "".
  std::string to_str() const;
  // Python's repr(x) (used inside str() of lists and dicts).
  std::string repr() const;
  // Python's type name, for error messages ("str", "int", "list", ...).
  std::string type_name() const;

 private:
  explicit Value(ValueKind k) : kind_(k) {}
  ValueKind kind_ = ValueKind::Undefined;
  int64_t int_ = 0;
  double float_ = 0;
  std::string str_;
  std::shared_ptr<List> list_;
  std::shared_ptr<Dict> dict_;
};

// Python ==, with 1 == 1.0 == True; undefined equals only undefined.
bool values_equal(const Value& a, const Value& b);

// Python's float repr: shortest round-trip digits, "1.0", "1e+16", "1e-05".
std::string float_repr(double d);

struct JsonOptions {
  std::optional<int> indent;  // None: one line
  bool sort_keys = false;
};
// transformers' tojson: json.dumps(x, ensure_ascii=False, indent=..., sort_keys=...).
std::string to_json(const Value& v, const JsonOptions& options);

}  // namespace parallm::chat
