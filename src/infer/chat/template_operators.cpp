// Python's operators on template values (see template_operators.h). Integer
// `//` and `%` floor toward negative infinity, as Python's do, not toward zero
// as C++'s.
#include "infer/chat/template_operators.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "base/error.h"

namespace parallm::chat {
namespace {

[[noreturn]] void bad_operands(const std::string& op, const Value& a, const Value& b, int line) {
  PX_CHECK(!a.is_undefined(), "chat template: {} (at line {})", a.undefined_hint(), line);
  PX_CHECK(!b.is_undefined(), "chat template: {} (at line {})", b.undefined_hint(), line);
  PX_FAIL("chat template: unsupported operand types for {}: '{}' and '{}' at line {}", op,
          a.type_name(), b.type_name(), line);
}

}  // namespace

std::vector<int64_t> slice_positions(int64_t len, const Value* start, const Value* stop,
                                     const Value* step, int line) {
  auto as_int = [&](const Value* v) -> std::optional<int64_t> {
    if (!v || v->is_none()) return std::nullopt;
    PX_CHECK(v->kind() == ValueKind::Int || v->kind() == ValueKind::Bool,
             "chat template: slice indices must be integers, got {} at line {}", v->type_name(),
             line);
    return v->as_int();
  };
  const int64_t st = as_int(step).value_or(1);
  PX_CHECK(st != 0, "chat template: slice step cannot be zero at line {}", line);
  auto clamp = [&](std::optional<int64_t> v, int64_t dflt) {
    if (!v) return dflt;
    int64_t x = *v < 0 ? *v + len : *v;
    if (st > 0) return std::clamp<int64_t>(x, 0, len);
    return std::clamp<int64_t>(x, -1, len - 1);
  };
  const int64_t b = clamp(as_int(start), st > 0 ? 0 : len - 1);
  const int64_t e = clamp(as_int(stop), st > 0 ? len : -1);
  std::vector<int64_t> out;
  for (int64_t i = b; st > 0 ? i < e : i > e; i += st) out.push_back(i);
  return out;
}

Value binary_op(const std::string& op, const Value& a, const Value& b, int line) {
  if (op == "~") return Value::string(a.to_str() + b.to_str());
  const bool nums = a.is_number() && b.is_number();
  const bool floats = nums && (a.kind() == ValueKind::Float || b.kind() == ValueKind::Float);
  if (op == "+") {
    if (nums)
      return floats ? Value::real(a.as_float() + b.as_float())
                    : Value::integer(a.as_int() + b.as_int());
    if (a.is_string() && b.is_string()) return Value::string(a.as_string() + b.as_string());
    if (a.kind() == ValueKind::List && b.kind() == ValueKind::List) {
      List out = a.as_list();
      out.insert(out.end(), b.as_list().begin(), b.as_list().end());
      return Value::list(std::move(out));
    }
    bad_operands(op, a, b, line);
  }
  if (op == "*" && (a.is_string() || a.kind() == ValueKind::List) && b.kind() == ValueKind::Int) {
    if (a.is_string()) {
      std::string out;
      for (int64_t i = 0; i < b.as_int(); ++i) out += a.as_string();
      return Value::string(out);
    }
    List out;
    for (int64_t i = 0; i < b.as_int(); ++i)
      out.insert(out.end(), a.as_list().begin(), a.as_list().end());
    return Value::list(std::move(out));
  }
  PX_CHECK(!(op == "%" && a.is_string()),
           "chat template: unsupported string formatting with '%' at line {}", line);
  if (!nums) bad_operands(op, a, b, line);
  if (op == "-")
    return floats ? Value::real(a.as_float() - b.as_float())
                  : Value::integer(a.as_int() - b.as_int());
  if (op == "*")
    return floats ? Value::real(a.as_float() * b.as_float())
                  : Value::integer(a.as_int() * b.as_int());
  if (op == "**") {
    if (!floats && b.as_int() >= 0) {
      int64_t r = 1;
      for (int64_t i = 0; i < b.as_int(); ++i) r *= a.as_int();
      return Value::integer(r);
    }
    return Value::real(std::pow(a.as_float(), b.as_float()));
  }
  PX_CHECK(b.as_float() != 0, "chat template: division by zero at line {}", line);
  if (op == "/") return Value::real(a.as_float() / b.as_float());
  if (floats) {
    const double q = std::floor(a.as_float() / b.as_float());
    return op == "//" ? Value::real(q) : Value::real(a.as_float() - q * b.as_float());
  }
  int64_t q = a.as_int() / b.as_int();
  if ((a.as_int() % b.as_int() != 0) && ((a.as_int() < 0) != (b.as_int() < 0))) --q;
  return op == "//" ? Value::integer(q) : Value::integer(a.as_int() - q * b.as_int());
}

bool compare_op(const std::string& op, const Value& a, const Value& b, int line) {
  if (op == "==") return values_equal(a, b);
  if (op == "!=") return !values_equal(a, b);
  if (op == "in" || op == "notin") {
    bool found = false;
    if (b.is_string()) {
      PX_CHECK(a.is_string(),
               "chat template: 'in <string>' requires string as left operand, not {} at line {}",
               a.type_name(), line);
      found = b.as_string().find(a.as_string()) != std::string::npos;
    } else if (b.kind() == ValueKind::List) {
      for (const Value& v : b.as_list()) found = found || values_equal(a, v);
    } else if (b.kind() == ValueKind::Dict) {
      found = a.is_string() && b.find(a.as_string());
    } else {
      PX_CHECK(b.is_undefined(), "chat template: argument of type '{}' is not iterable at line {}",
               b.type_name(), line);
    }
    return op == "in" ? found : !found;
  }
  int c = 0;
  if (a.is_number() && b.is_number()) {
    c = a.as_float() < b.as_float() ? -1 : a.as_float() > b.as_float() ? 1 : 0;
  } else if (a.is_string() && b.is_string()) {
    c = a.as_string().compare(b.as_string());
  } else {
    bad_operands(op, a, b, line);
  }
  if (op == "<") return c < 0;
  if (op == ">") return c > 0;
  if (op == "<=") return c <= 0;
  return c >= 0;
}

}  // namespace parallm::chat
