// Renderer of parsed chat templates (see template_renderer.h). `and`/`or`
// return an operand, as Python's do (Jinja2 compiles to Python); the other
// operators live in template_operators.
#include "infer/chat/template_renderer.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "infer/chat/template_builtins.h"
#include "infer/chat/template_operators.h"
#include "infer/chat/template_text.h"

namespace parallm::chat {
namespace {

// Python's slice.indices(len) followed by the walk.

class Renderer {
 public:
  explicit Renderer(const Dict& globals) {
    scopes_.emplace_back();
    for (const auto& [k, v] : globals) scopes_.back()[k] = v;
    scopes_.emplace_back();  // the template's own top level
  }

  std::string run(const Body& body) {
    exec(body);
    return std::move(out_);
  }

 private:
  void exec(const Body& body) {
    for (const Stmt& s : body) exec(s);
  }

  void exec(const Stmt& s) {
    switch (s.kind) {
      case StmtKind::Text:
        out_ += s.text;
        return;
      case StmtKind::Output:
        out_ += eval(*s.expr).to_str();
        return;
      case StmtKind::If:
        for (const auto& [cond, body] : s.branches) {
          if (!cond || eval(*cond).truthy()) {
            exec(body);
            return;
          }
        }
        return;
      case StmtKind::For:
        exec_for(s);
        return;
      case StmtKind::Set:
        scopes_.back()[s.targets[0]] = eval(*s.expr);
        return;
      case StmtKind::SetAttr: {
        const Value target = lookup(s.targets[0]);
        PX_CHECK(
            target.kind() == ValueKind::Namespace,
            "chat template: cannot assign attribute on non-namespace object '{}' ({}) at line {}",
            s.targets[0], target.type_name(), s.line);
        Value v = eval(*s.expr);
        Dict& attrs = target.namespace_attrs();
        for (auto& [k, old] : attrs) {
          if (k == s.targets[1]) {
            old = std::move(v);
            return;
          }
        }
        attrs.emplace_back(s.targets[1], std::move(v));
        return;
      }
    }
  }

  void bind(const std::vector<std::string>& targets, const Value& item, int line) {
    auto& scope = scopes_.back();
    if (targets.size() == 1) {
      scope[targets[0]] = item;
      return;
    }
    PX_CHECK(item.kind() == ValueKind::List && item.as_list().size() == targets.size(),
             "chat template: cannot unpack {} into {} loop variables at line {}", item.repr(),
             targets.size(), line);
    for (size_t i = 0; i < targets.size(); ++i) scope[targets[i]] = item.as_list()[i];
  }

  void exec_for(const Stmt& s) {
    const Value seq = eval(*s.expr);
    PX_CHECK(seq.kind() == ValueKind::List || seq.kind() == ValueKind::Dict || seq.is_string() ||
                 seq.is_undefined(),
             "chat template: '{}' object is not iterable at line {}", seq.type_name(), s.line);
    List items;
    if (seq.is_string() || seq.kind() == ValueKind::Dict) {
      items = apply_filter("list", seq, {}, {}, s.line).as_list();
    } else if (!seq.is_undefined()) {
      items = seq.as_list();
    }
    if (s.filter) {
      List kept;
      for (const Value& item : items) {
        scopes_.emplace_back();
        bind(s.targets, item, s.line);
        const bool keep = eval(*s.filter).truthy();
        scopes_.pop_back();
        if (keep) kept.push_back(item);
      }
      items = std::move(kept);
    }
    const auto n = int64_t(items.size());
    if (n == 0) {
      scopes_.emplace_back();
      exec(s.else_body);
      scopes_.pop_back();
      return;
    }
    for (int64_t i = 0; i < n; ++i) {
      scopes_.emplace_back();
      bind(s.targets, items[size_t(i)], s.line);
      Dict loop = {{"index0", Value::integer(i)},
                   {"index", Value::integer(i + 1)},
                   {"revindex0", Value::integer(n - 1 - i)},
                   {"revindex", Value::integer(n - i)},
                   {"first", Value::boolean(i == 0)},
                   {"last", Value::boolean(i == n - 1)},
                   {"length", Value::integer(n)},
                   {"depth0", Value::integer(0)},
                   {"depth", Value::integer(1)}};
      if (i > 0) loop.emplace_back("previtem", items[size_t(i - 1)]);
      if (i + 1 < n) loop.emplace_back("nextitem", items[size_t(i + 1)]);
      scopes_.back()["loop"] = Value::dict(std::move(loop));
      exec(s.body);
      scopes_.pop_back();
    }
  }

  Value lookup(const std::string& name) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      auto found = it->find(name);
      if (found != it->end()) return found->second;
    }
    return Value::undefined(fmt::format("'{}' is undefined", name));
  }

  static void check_defined(const Value& v, int line) {
    PX_CHECK(!v.is_undefined(), "chat template: {} (at line {})", v.undefined_hint(), line);
  }

  Value attribute(const Value& obj, const std::string& name, int line) {
    check_defined(obj, line);
    if (obj.kind() == ValueKind::Dict || obj.kind() == ValueKind::Namespace) {
      if (const Value* v = obj.find(name)) return *v;
    }
    return Value::undefined(
        fmt::format("'{} object' has no attribute '{}'", obj.type_name(), name));
  }

  Value item(const Value& obj, const Value& key, int line) {
    check_defined(obj, line);
    const bool int_key = key.kind() == ValueKind::Int || key.kind() == ValueKind::Bool;
    if (int_key && (obj.kind() == ValueKind::List || obj.is_string())) {
      const std::vector<char32_t> cps =
          obj.is_string() ? utf8_decode(obj.as_string()) : std::vector<char32_t>{};
      const auto len = int64_t(obj.is_string() ? cps.size() : obj.as_list().size());
      const int64_t i = key.as_int() < 0 ? key.as_int() + len : key.as_int();
      if (i >= 0 && i < len) {
        if (obj.kind() == ValueKind::List) return obj.as_list()[size_t(i)];
        std::string one;
        utf8_append(one, cps[size_t(i)]);
        return Value::string(one);
      }
    } else if (key.is_string()) {
      return attribute(obj, key.as_string(), line);  // dict item, else no attribute
    }
    return Value::undefined(
        fmt::format("'{} object' has no element {}", obj.type_name(), key.repr()));
  }

  Value slice(const Expr& e) {
    const Value obj = eval(*e.args[0]);
    check_defined(obj, e.line);
    Value parts[3];
    for (int i = 0; i < 3; ++i)
      if (e.args[size_t(i) + 1]) parts[i] = eval(*e.args[size_t(i) + 1]);
    auto part = [&](int i) { return e.args[size_t(i) + 1] ? &parts[i] : nullptr; };
    if (obj.kind() == ValueKind::List) {
      List out;
      for (int64_t i :
           slice_positions(int64_t(obj.as_list().size()), part(0), part(1), part(2), e.line))
        out.push_back(obj.as_list()[size_t(i)]);
      return Value::list(std::move(out));
    }
    PX_CHECK(obj.is_string(), "chat template: cannot slice a {} at line {}", obj.type_name(),
             e.line);
    const std::vector<char32_t> cps = utf8_decode(obj.as_string());
    std::vector<char32_t> out;
    for (int64_t i : slice_positions(int64_t(cps.size()), part(0), part(1), part(2), e.line))
      out.push_back(cps[size_t(i)]);
    return Value::string(utf8_encode(out));
  }

  Value call(const Expr& e, const std::vector<Value>& args, const Kwargs& kwargs) {
    if (e.name == "raise_exception") {
      throw TemplateRaised(args.empty() ? std::string() : args[0].to_str());
    }
    if (e.name == "namespace") {
      Dict attrs;
      for (const Value& a : args) {
        PX_CHECK(a.kind() == ValueKind::Dict,
                 "chat template: namespace() takes a dict, got {} at line {}", a.type_name(),
                 e.line);
        attrs.insert(attrs.end(), a.as_dict().begin(), a.as_dict().end());
      }
      attrs.insert(attrs.end(), kwargs.begin(), kwargs.end());
      return Value::name_space(std::move(attrs));
    }
    // range(stop) / range(start, stop[, step])
    PX_CHECK(!args.empty() && args.size() <= 3,
             "chat template: range takes 1 to 3 integers at line {}", e.line);
    for (const Value& a : args)
      PX_CHECK(a.kind() == ValueKind::Int, "chat template: range takes integers, got {} at line {}",
               a.type_name(), e.line);
    const int64_t start = args.size() > 1 ? args[0].as_int() : 0;
    const int64_t stop = args.size() > 1 ? args[1].as_int() : args[0].as_int();
    const int64_t step = args.size() > 2 ? args[2].as_int() : 1;
    PX_CHECK(step != 0, "chat template: range step cannot be zero at line {}", e.line);
    List out;
    for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step)
      out.push_back(Value::integer(i));
    return Value::list(std::move(out));
  }

  Value eval(const Expr& e) {
    switch (e.kind) {
      case ExprKind::Literal:
        return e.literal;
      case ExprKind::Name:
        return lookup(e.name);
      case ExprKind::List: {
        List items;
        for (const ExprPtr& a : e.args) items.push_back(eval(*a));
        return Value::list(std::move(items));
      }
      case ExprKind::Dict: {
        Dict items;
        for (size_t i = 0; i < e.args.size(); i += 2) {
          const Value key = eval(*e.args[i]);
          PX_CHECK(key.is_string(), "chat template: dict keys must be strings, got {} at line {}",
                   key.type_name(), e.line);
          items.emplace_back(key.as_string(), eval(*e.args[i + 1]));
        }
        return Value::dict(std::move(items));
      }
      case ExprKind::Attr:
        return attribute(eval(*e.args[0]), e.name, e.line);
      case ExprKind::Item: {
        const Value obj = eval(*e.args[0]);
        return item(obj, eval(*e.args[1]), e.line);
      }
      case ExprKind::Slice:
        return slice(e);
      case ExprKind::Call:
      case ExprKind::Method:
      case ExprKind::Filter:
      case ExprKind::Test: {
        const size_t first = e.kind == ExprKind::Call ? 0 : 1;
        const Value subject = first ? eval(*e.args[0]) : Value();
        std::vector<Value> args;
        for (size_t i = first; i < e.args.size(); ++i) args.push_back(eval(*e.args[i]));
        Kwargs kwargs;
        for (const auto& [k, v] : e.kwargs) kwargs.emplace_back(k, eval(*v));
        if (e.kind == ExprKind::Call) return call(e, args, kwargs);
        if (e.kind == ExprKind::Method) return call_method(subject, e.name, args, kwargs, e.line);
        if (e.kind == ExprKind::Filter) return apply_filter(e.name, subject, args, kwargs, e.line);
        return Value::boolean(apply_test(e.name, subject, args, e.line) != e.negated);
      }
      case ExprKind::Neg:
      case ExprKind::Pos: {
        const Value v = eval(*e.args[0]);
        check_defined(v, e.line);
        PX_CHECK(v.is_number(), "chat template: bad operand type for unary {}: '{}' at line {}",
                 e.kind == ExprKind::Neg ? '-' : '+', v.type_name(), e.line);
        if (e.kind == ExprKind::Pos)
          return v.kind() == ValueKind::Bool ? Value::integer(v.as_int()) : v;
        return v.kind() == ValueKind::Float ? Value::real(-v.as_float())
                                            : Value::integer(-v.as_int());
      }
      case ExprKind::Binary:
        return binary_op(e.name, eval(*e.args[0]), eval(*e.args[1]), e.line);
      case ExprKind::Compare: {
        Value left = eval(*e.args[0]);
        for (size_t i = 0; i < e.ops.size(); ++i) {
          Value right = eval(*e.args[i + 1]);
          if (!compare_op(e.ops[i], left, right, e.line)) return Value::boolean(false);
          left = std::move(right);
        }
        return Value::boolean(true);
      }
      case ExprKind::And: {
        Value left = eval(*e.args[0]);
        return left.truthy() ? eval(*e.args[1]) : left;
      }
      case ExprKind::Or: {
        Value left = eval(*e.args[0]);
        return left.truthy() ? left : eval(*e.args[1]);
      }
      case ExprKind::Not:
        return Value::boolean(!eval(*e.args[0]).truthy());
      case ExprKind::Cond:
        if (eval(*e.args[1]).truthy()) return eval(*e.args[0]);
        return e.args[2] ? eval(*e.args[2]) : Value::undefined("the inline if had no else");
    }
    return Value();
  }

  std::vector<std::unordered_map<std::string, Value>> scopes_;
  std::string out_;
};

}  // namespace

std::string render_template(const Body& body, const Dict& globals) {
  return Renderer(globals).run(body);
}

}  // namespace parallm::chat
