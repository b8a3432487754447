// Statement parser of the chat-template subset (see template_parser.h):
// text, {{ }} and the tags if/elif/else/endif, for/else/endfor, set and
// generation; expressions come from template_expression_parser.
#include "infer/chat/template_parser.h"

#include <set>
#include <string>

#include "base/error.h"
#include "infer/chat/template_expression_parser.h"
#include "infer/chat/template_lexer.h"

namespace parallm::chat {
namespace {

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : c_(std::move(tokens)) {}

  Body parse() {
    std::string end_tag;
    return parse_body({}, end_tag);
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

  // Statements until `{% <one of ends> %}`; the end tag's name goes to end_tag
  // (its `%}` is left for the caller, which may read more of the tag).
  Body parse_body(const std::set<std::string>& ends, std::string& end_tag) {
    Body body;
    for (;;) {
      const Token& t = peek();
      if (t.kind == TokenKind::Eof) {
        PX_CHECK(ends.empty(), "chat template: missing '{{% {} %}}' at end of template",
                 *ends.rbegin());
        return body;
      }
      if (t.kind == TokenKind::Text) {
        Stmt s{StmtKind::Text, t.line};
        s.text = next().text;
        body.push_back(std::move(s));
      } else if (t.kind == TokenKind::VarBegin) {
        next();
        Stmt s{StmtKind::Output, t.line};
        s.expr = parse_expression(c_);
        expect(TokenKind::VarEnd, "'}}'");
        body.push_back(std::move(s));
      } else {
        next();  // {%
        const int line = peek().line;
        const std::string tag = expect_name();
        if (ends.count(tag)) {
          end_tag = tag;
          return body;
        }
        body.push_back(parse_tag(tag, line));
      }
    }
  }

  Stmt parse_tag(const std::string& tag, int line) {
    if (tag == "if") return parse_if(line);
    if (tag == "for") return parse_for(line);
    if (tag == "set") return parse_set(line);
    if (tag == "generation") {  // transformers' assistant-mask tag: renders its body
      expect(TokenKind::BlockEnd, "'%}'");
      std::string end;
      Stmt s{StmtKind::If, line};
      auto always = make_expr(ExprKind::Literal, line);
      always->literal = Value::boolean(true);
      Body body = parse_body({"endgeneration"}, end);
      expect(TokenKind::BlockEnd, "'%}'");
      s.branches.emplace_back(std::move(always), std::move(body));
      return s;
    }
    static const std::set<std::string> kEnds = {"elif",   "else",   "endif",
                                                "endfor", "endset", "endgeneration"};
    PX_CHECK(!kEnds.count(tag), "chat template: unexpected '{{% {} %}}' at line {}", tag, line);
    PX_FAIL("chat template: unsupported tag '{}' at line {}", tag, line);
  }

  Stmt parse_if(int line) {
    Stmt s{StmtKind::If, line};
    ExprPtr cond = parse_expression(c_);
    for (;;) {
      expect(TokenKind::BlockEnd, "'%}'");
      std::string end;
      Body body = parse_body({"elif", "else", "endif"}, end);
      s.branches.emplace_back(std::move(cond), std::move(body));
      if (end == "elif") {
        cond = parse_expression(c_);
      } else if (end == "else") {
        expect(TokenKind::BlockEnd, "'%}'");
        Body else_body = parse_body({"endif"}, end);
        s.branches.emplace_back(nullptr, std::move(else_body));
        expect(TokenKind::BlockEnd, "'%}'");
        return s;
      } else {
        expect(TokenKind::BlockEnd, "'%}'");
        return s;
      }
    }
  }

  Stmt parse_for(int line) {
    Stmt s{StmtKind::For, line};
    s.targets.push_back(expect_name());
    while (is_op(",")) {
      next();
      s.targets.push_back(expect_name());
    }
    if (!is_name("in")) unexpected("'in'");
    next();
    s.expr = parse_or_expression(c_);  // no inline if: `if` here filters the loop
    if (is_name("if")) {
      next();
      s.filter = parse_or_expression(c_);
    }
    PX_CHECK(!is_name("recursive"), "chat template: unsupported recursive for loop at line {}",
             line);
    expect(TokenKind::BlockEnd, "'%}'");
    std::string end;
    s.body = parse_body({"else", "endfor"}, end);
    if (end == "else") {
      expect(TokenKind::BlockEnd, "'%}'");
      s.else_body = parse_body({"endfor"}, end);
    }
    expect(TokenKind::BlockEnd, "'%}'");
    return s;
  }

  Stmt parse_set(int line) {
    Stmt s{StmtKind::Set, line};
    s.targets.push_back(expect_name());
    if (is_op(".")) {
      next();
      s.kind = StmtKind::SetAttr;
      s.targets.push_back(expect_name());
    }
    PX_CHECK(!is_op(","), "chat template: unsupported tuple assignment in set at line {}", line);
    PX_CHECK(peek().kind != TokenKind::BlockEnd,
             "chat template: unsupported block set ('{{% set {} %}}...{{% endset %}}') at line {}",
             s.targets[0], line);
    expect_op("=");
    s.expr = parse_expression(c_);
    expect(TokenKind::BlockEnd, "'%}'");
    return s;
  }

  TokenCursor c_;
};

}  // namespace

Body parse_template(std::string_view source) { return Parser(lex_template(source)).parse(); }

}  // namespace parallm::chat
