// Expression parser of the chat-template subset (see template_expression_parser.h).
// One method per precedence level, as jinja2/parser.py, so that templates
// relying on Jinja's binding (filters before `+`) parse the same way.
#include "infer/chat/template_expression_parser.h"

#include <algorithm>

#include "base/error.h"
#include "infer/chat/template_builtins.h"

namespace parallm::chat {

const Token& TokenCursor::peek(size_t ahead) const {
  return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)];
}
Token TokenCursor::next() { return tokens_[std::min(pos_++, tokens_.size() - 1)]; }
bool TokenCursor::is_op(std::string_view op, size_t ahead) const {
  return peek(ahead).kind == TokenKind::Op && peek(ahead).text == op;
}
bool TokenCursor::is_name(std::string_view name, size_t ahead) const {
  return peek(ahead).kind == TokenKind::Name && peek(ahead).text == name;
}
void TokenCursor::unexpected(std::string_view wanted) const {
  const Token& t = peek();
  const std::string got = t.kind == TokenKind::Eof        ? "end of template"
                          : t.kind == TokenKind::BlockEnd ? "'%}'"
                          : t.kind == TokenKind::VarEnd   ? "'}}'"
                                                          : "'" + t.text + "'";
  PX_FAIL("chat template: expected {}, got {} at line {}", wanted, got, t.line);
}
void TokenCursor::expect_op(std::string_view op) {
  if (!is_op(op)) unexpected("'" + std::string(op) + "'");
  next();
}
void TokenCursor::expect(TokenKind kind, std::string_view what) {
  if (peek().kind != kind) unexpected(what);
  next();
}
std::string TokenCursor::expect_name() {
  if (peek().kind != TokenKind::Name) unexpected("a name");
  return next().text;
}

namespace {

class ExpressionParser {
 public:
  explicit ExpressionParser(TokenCursor& cursor) : c_(cursor) {}

  ExprPtr parse_expr() {
    ExprPtr e = parse_or();
    if (!is_name("if")) return e;
    const int line = next().line;
    auto c = make_expr(ExprKind::Cond, line);
    c->args.push_back(std::move(e));
    c->args.push_back(parse_or());
    if (is_name("else")) {
      next();
      c->args.push_back(parse_expr());
    } else {
      c->args.push_back(nullptr);
    }
    return c;
  }

  ExprPtr parse_or() {
    ExprPtr left = parse_and();
    while (is_name("or")) {
      auto e = make_expr(ExprKind::Or, next().line);
      e->args.push_back(std::move(left));
      e->args.push_back(parse_and());
      left = std::move(e);
    }
    return left;
  }

  ExprPtr parse_and() {
    ExprPtr left = parse_not();
    while (is_name("and")) {
      auto e = make_expr(ExprKind::And, next().line);
      e->args.push_back(std::move(left));
      e->args.push_back(parse_not());
      left = std::move(e);
    }
    return left;
  }

  ExprPtr parse_not() {
    if (!is_name("not")) return parse_compare();
    auto e = make_expr(ExprKind::Not, next().line);
    e->args.push_back(parse_not());
    return e;
  }

  ExprPtr parse_compare() {
    ExprPtr first = parse_math1();
    ExprPtr cmp;
    for (;;) {
      std::string op;
      if (peek().kind == TokenKind::Op &&
          (peek().text == "==" || peek().text == "!=" || peek().text == "<" || peek().text == ">" ||
           peek().text == "<=" || peek().text == ">=")) {
        op = next().text;
      } else if (is_name("in")) {
        next();
        op = "in";
      } else if (is_name("not") && is_name("in", 1)) {
        next();
        next();
        op = "notin";
      } else {
        break;
      }
      if (!cmp) {
        cmp = make_expr(ExprKind::Compare, first->line);
        cmp->args.push_back(std::move(first));
      }
      cmp->ops.push_back(op);
      cmp->args.push_back(parse_math1());
    }
    return cmp ? std::move(cmp) : std::move(first);
  }

  ExprPtr binary_chain(ExprPtr (ExpressionParser::*operand)(),
                       std::initializer_list<std::string_view> ops) {
    ExprPtr left = (this->*operand)();
    for (;;) {
      bool matched = false;
      for (std::string_view op : ops) matched = matched || is_op(op);
      if (!matched) return left;
      const Token t = next();
      auto e = make_expr(ExprKind::Binary, t.line);
      e->name = t.text;
      e->args.push_back(std::move(left));
      e->args.push_back((this->*operand)());
      left = std::move(e);
    }
  }
  ExprPtr parse_math1() { return binary_chain(&ExpressionParser::parse_concat, {"+", "-"}); }
  ExprPtr parse_concat() { return binary_chain(&ExpressionParser::parse_math2, {"~"}); }
  ExprPtr parse_math2() {
    return binary_chain(&ExpressionParser::parse_pow, {"*", "/", "//", "%"});
  }
  ExprPtr parse_pow() { return binary_chain(&ExpressionParser::parse_unary_filtered, {"**"}); }
  ExprPtr parse_unary_filtered() { return parse_unary(true); }

  ExprPtr parse_unary(bool with_filter) {
    ExprPtr e;
    if (is_op("-") || is_op("+")) {
      const Token t = next();
      e = make_expr(t.text == "-" ? ExprKind::Neg : ExprKind::Pos, t.line);
      e->args.push_back(parse_unary(false));
    } else {
      e = parse_primary();
    }
    e = parse_postfix(std::move(e));
    if (with_filter) e = parse_filters(std::move(e));
    return e;
  }

  ExprPtr parse_primary() {
    const Token t = next();
    if (t.kind == TokenKind::Name) {
      auto e = make_expr(ExprKind::Literal, t.line);
      if (t.text == "true" || t.text == "True") {
        e->literal = Value::boolean(true);
      } else if (t.text == "false" || t.text == "False") {
        e->literal = Value::boolean(false);
      } else if (t.text == "none" || t.text == "None") {
        e->literal = Value::none();
      } else {
        e->kind = ExprKind::Name;
        e->name = t.text;
      }
      return e;
    }
    if (t.kind == TokenKind::String) {
      std::string s = t.text;
      while (peek().kind == TokenKind::String) s += next().text;  // 'a' 'b' == 'ab'
      auto e = make_expr(ExprKind::Literal, t.line);
      e->literal = Value::string(std::move(s));
      return e;
    }
    if (t.kind == TokenKind::Int || t.kind == TokenKind::Float) {
      auto e = make_expr(ExprKind::Literal, t.line);
      e->literal = t.kind == TokenKind::Int ? Value::integer(std::stoll(t.text))
                                            : Value::real(std::stod(t.text));
      return e;
    }
    if (t.kind == TokenKind::Op && (t.text == "(" || t.text == "[")) {
      const std::string close = t.text == "(" ? ")" : "]";
      auto e = make_expr(ExprKind::List, t.line);  // tuples render like lists here
      bool tuple = t.text == "[";
      while (!is_op(close)) {
        e->args.push_back(parse_expr());
        if (!is_op(",")) break;
        next();
        tuple = true;
      }
      expect_op(close);
      if (!tuple && e->args.size() == 1) return std::move(e->args[0]);  // (expr)
      PX_CHECK(t.text == "[", "chat template: unsupported tuple literal at line {}", t.line);
      return e;
    }
    if (t.kind == TokenKind::Op && t.text == "{") {
      auto e = make_expr(ExprKind::Dict, t.line);
      while (!is_op("}")) {
        e->args.push_back(parse_expr());
        expect_op(":");
        e->args.push_back(parse_expr());
        if (!is_op(",")) break;
        next();
      }
      expect_op("}");
      return e;
    }
    c_.back();
    unexpected("an expression");
  }

  void parse_call_args(Expr& e) {
    expect_op("(");
    while (!is_op(")")) {
      if (peek().kind == TokenKind::Name && is_op("=", 1)) {
        std::string key = next().text;
        next();
        e.kwargs.emplace_back(std::move(key), parse_expr());
      } else {
        e.args.push_back(parse_expr());
      }
      if (!is_op(",")) break;
      next();
    }
    expect_op(")");
  }

  ExprPtr parse_postfix(ExprPtr e) {
    for (;;) {
      if (is_op(".")) {
        const int line = next().line;
        if (peek().kind == TokenKind::Int) {  // x.0 is x[0] in Jinja
          auto item = make_expr(ExprKind::Item, line);
          item->args.push_back(std::move(e));
          auto key = make_expr(ExprKind::Literal, line);
          key->literal = Value::integer(std::stoll(next().text));
          item->args.push_back(std::move(key));
          e = std::move(item);
          continue;
        }
        auto attr = make_expr(ExprKind::Attr, line);
        attr->name = expect_name();
        attr->args.push_back(std::move(e));
        e = std::move(attr);
      } else if (is_op("[")) {
        const int line = next().line;
        ExprPtr parts[3];
        bool slice = false;
        for (int i = 0; i < 3; ++i) {
          if (!is_op(":") && !is_op("]")) parts[i] = parse_expr();
          if (i < 2 && is_op(":")) {
            next();
            slice = true;
          } else {
            break;
          }
        }
        expect_op("]");
        auto item = make_expr(slice ? ExprKind::Slice : ExprKind::Item, line);
        item->args.push_back(std::move(e));
        PX_CHECK(slice || parts[0], "chat template: empty subscript '[]' at line {}", line);
        for (int i = 0; i < (slice ? 3 : 1); ++i) item->args.push_back(std::move(parts[i]));
        e = std::move(item);
      } else if (is_op("(")) {
        const int line = peek().line;
        ExprPtr call;
        if (e->kind == ExprKind::Name) {
          PX_CHECK(has_function(e->name), "chat template: unsupported function '{}' at line {}",
                   e->name, line);
          call = make_expr(ExprKind::Call, line);
          call->name = e->name;
        } else if (e->kind == ExprKind::Attr) {
          PX_CHECK(has_method(e->name), "chat template: unsupported method '{}' at line {}",
                   e->name, line);
          call = make_expr(ExprKind::Method, line);
          call->name = e->name;
          call->args.push_back(std::move(e->args[0]));
        } else {
          PX_FAIL("chat template: unsupported call of an expression at line {}", line);
        }
        parse_call_args(*call);
        e = std::move(call);
      } else {
        return e;
      }
    }
  }

  ExprPtr parse_filters(ExprPtr e) {
    for (;;) {
      if (is_op("|")) {
        const int line = next().line;
        auto f = make_expr(ExprKind::Filter, line);
        f->name = expect_name();
        PX_CHECK(has_filter(f->name), "chat template: unsupported filter '{}' at line {}", f->name,
                 line);
        f->args.push_back(std::move(e));
        if (is_op("(")) parse_call_args(*f);
        e = parse_postfix(std::move(f));
      } else if (is_name("is")) {
        const int line = next().line;
        auto t = make_expr(ExprKind::Test, line);
        if (is_name("not")) {
          next();
          t->negated = true;
        }
        t->name = expect_name();
        PX_CHECK(has_test(t->name), "chat template: unsupported test '{}' at line {}", t->name,
                 line);
        t->args.push_back(std::move(e));
        if (is_op("(")) {
          parse_call_args(*t);
        } else if (peek().kind == TokenKind::String || peek().kind == TokenKind::Int ||
                   peek().kind == TokenKind::Float) {
          t->args.push_back(parse_primary());  // `x is divisibleby 3`
        }
        e = std::move(t);
      } else {
        return e;
      }
    }
  }

 private:
  const Token& peek(size_t ahead = 0) const { return c_.peek(ahead); }
  Token next() { return c_.next(); }
  bool is_op(std::string_view op, size_t ahead = 0) const { return c_.is_op(op, ahead); }
  bool is_name(std::string_view name, size_t ahead = 0) const { return c_.is_name(name, ahead); }
  [[noreturn]] void unexpected(std::string_view wanted) const { c_.unexpected(wanted); }
  void expect_op(std::string_view op) { c_.expect_op(op); }
  void expect(TokenKind kind, std::string_view what) { c_.expect(kind, what); }
  std::string expect_name() { return c_.expect_name(); }

  TokenCursor& c_;
};

}  // namespace

ExprPtr parse_expression(TokenCursor& cursor) { return ExpressionParser(cursor).parse_expr(); }
ExprPtr parse_or_expression(TokenCursor& cursor) { return ExpressionParser(cursor).parse_or(); }

}  // namespace parallm::chat
