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
  // Statements until `{% <one of ends> %}`; the end tag's name goes to end_tag
  // (its `%}` is left for the caller, which may read more of the tag).
  Body parse_body(const std::set<std::string>& ends, std::string& end_tag) {
    Body body;
    for (;;) {
      const Token& t = c_.peek();
      if (t.kind == TokenKind::Eof) {
        PX_CHECK(ends.empty(), "chat template: missing '{{% {} %}}' at end of template",
                 *ends.rbegin());
        return body;
      }
      if (t.kind == TokenKind::Text) {
        Stmt s{StmtKind::Text, t.line};
        s.text = c_.next().text;
        body.push_back(std::move(s));
      } else if (t.kind == TokenKind::VarBegin) {
        c_.next();
        Stmt s{StmtKind::Output, t.line};
        s.expr = parse_expression(c_);
        c_.expect(TokenKind::VarEnd, "'}}'");
        body.push_back(std::move(s));
      } else {
        c_.next();  // {%
        const int line = c_.peek().line;
        const std::string tag = c_.expect_name();
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
      c_.expect(TokenKind::BlockEnd, "'%}'");
      std::string end;
      Stmt s{StmtKind::If, line};
      auto always = make_expr(ExprKind::Literal, line);
      always->literal = Value::boolean(true);
      Body body = parse_body({"endgeneration"}, end);
      c_.expect(TokenKind::BlockEnd, "'%}'");
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
      c_.expect(TokenKind::BlockEnd, "'%}'");
      std::string end;
      Body body = parse_body({"elif", "else", "endif"}, end);
      s.branches.emplace_back(std::move(cond), std::move(body));
      if (end == "elif") {
        cond = parse_expression(c_);
      } else if (end == "else") {
        c_.expect(TokenKind::BlockEnd, "'%}'");
        Body else_body = parse_body({"endif"}, end);
        s.branches.emplace_back(nullptr, std::move(else_body));
        c_.expect(TokenKind::BlockEnd, "'%}'");
        return s;
      } else {
        c_.expect(TokenKind::BlockEnd, "'%}'");
        return s;
      }
    }
  }

  Stmt parse_for(int line) {
    Stmt s{StmtKind::For, line};
    s.targets.push_back(c_.expect_name());
    while (c_.is_op(",")) {
      c_.next();
      s.targets.push_back(c_.expect_name());
    }
    if (!c_.is_name("in")) c_.unexpected("'in'");
    c_.next();
    s.expr = parse_or_expression(c_);  // no inline if: `if` here filters the loop
    if (c_.is_name("if")) {
      c_.next();
      s.filter = parse_or_expression(c_);
    }
    PX_CHECK(!c_.is_name("recursive"), "chat template: unsupported recursive for loop at line {}",
             line);
    c_.expect(TokenKind::BlockEnd, "'%}'");
    std::string end;
    s.body = parse_body({"else", "endfor"}, end);
    if (end == "else") {
      c_.expect(TokenKind::BlockEnd, "'%}'");
      s.else_body = parse_body({"endfor"}, end);
    }
    c_.expect(TokenKind::BlockEnd, "'%}'");
    return s;
  }

  Stmt parse_set(int line) {
    Stmt s{StmtKind::Set, line};
    s.targets.push_back(c_.expect_name());
    if (c_.is_op(".")) {
      c_.next();
      s.kind = StmtKind::SetAttr;
      s.targets.push_back(c_.expect_name());
    }
    PX_CHECK(!c_.is_op(","), "chat template: unsupported tuple assignment in set at line {}", line);
    PX_CHECK(c_.peek().kind != TokenKind::BlockEnd,
             "chat template: unsupported block set ('{{% set {} %}}...{{% endset %}}') at line {}",
             s.targets[0], line);
    c_.expect_op("=");
    s.expr = parse_expression(c_);
    c_.expect(TokenKind::BlockEnd, "'%}'");
    return s;
  }

  TokenCursor c_;
};

}  // namespace

Body parse_template(std::string_view source) { return Parser(lex_template(source)).parse(); }

}  // namespace parallm::chat
