// The expression half of the chat-template parser, and the token cursor both
// halves share. The grammar follows jinja2/parser.py: or > and > not > compare
// (chained, in, not in) > (+ -) > ~ > (* / // %) > ** > unary > primary with
// postfix (.attr, [key], [a:b:c], calls), then filters `|` and tests `is`, so a
// filter binds tighter than any binary operator (`'a' + x | trim`).
// Invariant: a filter, test, function or method name not in template_builtins
// is refused here, with its line.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "infer/chat/template_ast.h"
#include "infer/chat/template_lexer.h"

namespace parallm::chat {

class TokenCursor {
 public:
  explicit TokenCursor(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

  const Token& peek(size_t ahead = 0) const;
  Token next();
  void back() { --pos_; }
  bool is_op(std::string_view op, size_t ahead = 0) const;
  bool is_name(std::string_view name, size_t ahead = 0) const;
  // Throws "chat template: expected <wanted>, got <token> at line N".
  [[noreturn]] void unexpected(std::string_view wanted) const;
  void expect_op(std::string_view op);
  void expect(TokenKind kind, std::string_view what);
  std::string expect_name();

 private:
  std::vector<Token> tokens_;
  size_t pos_ = 0;
};

// expr := or ['if' or ['else' expr]]
ExprPtr parse_expression(TokenCursor& cursor);
// An expression without the inline `if` (a for loop's iterable and filter).
ExprPtr parse_or_expression(TokenCursor& cursor);

}  // namespace parallm::chat
