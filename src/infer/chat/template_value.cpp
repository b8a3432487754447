// Value with Python semantics (see template_value.h). str() of containers uses
// repr() of their items, as Python does, and tojson follows json.dumps with
// ensure_ascii=False: only '"', '\\' and control characters are escaped.
#include "infer/chat/template_value.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>

#include "base/error.h"
#include "infer/chat/template_text.h"

namespace parallm::chat {

const Value* Value::find(const std::string& key) const {
  if (!dict_) return nullptr;
  for (const auto& [k, v] : *dict_)
    if (k == key) return &v;
  return nullptr;
}

bool Value::truthy() const {
  switch (kind_) {
    case ValueKind::Undefined:
    case ValueKind::None:
      return false;
    case ValueKind::Bool:
    case ValueKind::Int:
      return int_ != 0;
    case ValueKind::Float:
      return float_ != 0;
    case ValueKind::String:
      return !str_.empty();
    case ValueKind::List:
      return !list_->empty();
    case ValueKind::Dict:
      return !dict_->empty();
    case ValueKind::Namespace:
      return true;
  }
  return false;
}

std::string float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  // Shortest round-trip digits in scientific form, then Python's layout:
  // fixed notation for exponents in [-5, 16), scientific otherwise.
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), d, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  const size_t e = sci.find('e');
  std::string mant = sci.substr(0, e);
  const int exp = std::stoi(sci.substr(e + 1));
  const bool neg = mant[0] == '-';
  if (neg) mant.erase(0, 1);
  std::string digits;
  for (char c : mant)
    if (c != '.') digits += c;
  std::string out;
  if (exp >= -5 && exp < 16) {
    if (exp >= 0) {
      std::string ip = digits.substr(0, std::min<size_t>(digits.size(), exp + 1));
      while (int(ip.size()) < exp + 1) ip += '0';
      std::string fp = int(digits.size()) > exp + 1 ? digits.substr(exp + 1) : "0";
      out = ip + "." + fp;
    } else {
      out = "0." + std::string(-exp - 1, '0') + digits;
    }
  } else {
    out = digits.substr(0, 1);
    if (digits.size() > 1) {
      out += '.';
      out += digits.substr(1);
    }
    out += fmt::format("e{}{:02d}", exp < 0 ? '-' : '+', std::abs(exp));
  }
  return neg ? "-" + out : out;
}

namespace {

std::string string_repr(const std::string& s) {
  const bool has_single = s.find('\'') != std::string::npos;
  const bool has_double = s.find('"') != std::string::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  for (char32_t cp : utf8_decode(s)) {
    if (cp == char32_t(quote) || cp == U'\\') {
      out += '\\';
      out += char(cp);
    } else if (cp == U'\n') {
      out += "\\n";
    } else if (cp == U'\r') {
      out += "\\r";
    } else if (cp == U'\t') {
      out += "\\t";
    } else if (cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp < 0xA0)) {
      out += fmt::format("\\x{:02x}", uint32_t(cp));
    } else {
      utf8_append(out, cp);
    }
  }
  out += quote;
  return out;
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20)
          out += fmt::format("\\u{:04x}", int(c));
        else
          out += c;
    }
  }
  return out + "\"";
}

void json_dump(const Value& v, const JsonOptions& o, int level, std::string& out) {
  const std::string item_sep = o.indent ? "," : ", ";
  auto newline = [&](int lvl) {
    if (o.indent) {
      out += '\n';
      out.append(size_t(*o.indent) * lvl, ' ');
    }
  };
  switch (v.kind()) {
    case ValueKind::Undefined:
      PX_FAIL("chat template: tojson: Object of type Undefined is not JSON serializable ({})",
              v.undefined_hint());
    case ValueKind::None:
      out += "null";
      return;
    case ValueKind::Bool:
      out += v.as_bool() ? "true" : "false";
      return;
    case ValueKind::Int:
      out += std::to_string(v.as_int());
      return;
    case ValueKind::Float: {
      const double d = v.as_float();
      out += std::isnan(d)   ? "NaN"
             : std::isinf(d) ? (d > 0 ? "Infinity" : "-Infinity")
                             : float_repr(d);
      return;
    }
    case ValueKind::String:
      out += json_string(v.as_string());
      return;
    case ValueKind::List: {
      if (v.as_list().empty()) {
        out += "[]";
        return;
      }
      out += "[";
      bool first = true;
      for (const Value& item : v.as_list()) {
        if (!first) out += item_sep;
        first = false;
        newline(level + 1);
        json_dump(item, o, level + 1, out);
      }
      newline(level);
      out += "]";
      return;
    }
    case ValueKind::Dict:
    case ValueKind::Namespace: {
      if (v.as_dict().empty()) {
        out += "{}";
        return;
      }
      Dict items = v.as_dict();
      if (o.sort_keys)
        std::stable_sort(items.begin(), items.end(),
                         [](const auto& a, const auto& b) { return a.first < b.first; });
      out += "{";
      bool first = true;
      for (const auto& [k, item] : items) {
        if (!first) out += item_sep;
        first = false;
        newline(level + 1);
        out += json_string(k) + ": ";
        json_dump(item, o, level + 1, out);
      }
      newline(level);
      out += "}";
      return;
    }
  }
}

}  // namespace

std::string Value::repr() const {
  switch (kind_) {
    case ValueKind::String:
      return string_repr(str_);
    case ValueKind::Undefined:
      return "Undefined";
    default:
      return to_str();
  }
}

std::string Value::to_str() const {
  switch (kind_) {
    case ValueKind::Undefined:
      return "";
    case ValueKind::None:
      return "None";
    case ValueKind::Bool:
      return int_ ? "True" : "False";
    case ValueKind::Int:
      return std::to_string(int_);
    case ValueKind::Float:
      return float_repr(float_);
    case ValueKind::String:
      return str_;
    case ValueKind::List: {
      std::string out = "[";
      for (size_t i = 0; i < list_->size(); ++i) out += (i ? ", " : "") + (*list_)[i].repr();
      return out + "]";
    }
    case ValueKind::Dict:
    case ValueKind::Namespace: {
      std::string out = kind_ == ValueKind::Namespace ? "<Namespace {" : "{";
      for (size_t i = 0; i < dict_->size(); ++i)
        out += (i ? ", " : "") + string_repr((*dict_)[i].first) + ": " + (*dict_)[i].second.repr();
      return out + (kind_ == ValueKind::Namespace ? "}>" : "}");
    }
  }
  return "";
}

std::string Value::type_name() const {
  switch (kind_) {
    case ValueKind::Undefined:
      return "Undefined";
    case ValueKind::None:
      return "NoneType";
    case ValueKind::Bool:
      return "bool";
    case ValueKind::Int:
      return "int";
    case ValueKind::Float:
      return "float";
    case ValueKind::String:
      return "str";
    case ValueKind::List:
      return "list";
    case ValueKind::Dict:
      return "dict";
    case ValueKind::Namespace:
      return "Namespace";
  }
  return "?";
}

bool values_equal(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.kind() == ValueKind::Float || b.kind() == ValueKind::Float)
      return a.as_float() == b.as_float();
    return a.as_int() == b.as_int();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case ValueKind::Undefined:
    case ValueKind::None:
      return true;
    case ValueKind::String:
      return a.as_string() == b.as_string();
    case ValueKind::List:
      return std::equal(a.as_list().begin(), a.as_list().end(), b.as_list().begin(),
                        b.as_list().end(), values_equal);
    case ValueKind::Dict: {
      if (a.as_dict().size() != b.as_dict().size()) return false;
      for (const auto& [k, v] : a.as_dict()) {
        const Value* other = b.find(k);
        if (!other || !values_equal(v, *other)) return false;
      }
      return true;
    }
    case ValueKind::Namespace:
      return &a.namespace_attrs() == &b.namespace_attrs();
    default:
      return false;
  }
}

std::string to_json(const Value& v, const JsonOptions& options) {
  std::string out;
  json_dump(v, options, 0, out);
  return out;
}

}  // namespace parallm::chat
