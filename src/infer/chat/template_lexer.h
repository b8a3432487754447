// Lexer of the chat-template Jinja subset: splits the source into text and
// `{{ }}` / `{% %}` tags, tokenises inside the tags, and applies Jinja's
// whitespace control as transformers configures it (trim_blocks,
// lstrip_blocks, `-` modifiers, `+` opt-outs, no keep_trailing_newline).
// Invariant: the text tokens are exactly the bytes Jinja2 3.1 would output for
// the template's literal text; comments `{# #}` leave no token.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace parallm::chat {

enum class TokenKind {
  Text,        // literal template text (whitespace control already applied)
  VarBegin,    // {{
  VarEnd,      // }}
  BlockBegin,  // {%
  BlockEnd,    // %}
  Name,        // identifiers and keywords (if, and, true, none, ...)
  String,      // a string literal, escapes already decoded
  Int,
  Float,
  Op,  // + - * / // % ** ~ == != < > <= >= ( ) [ ] { } , . : | =
  Eof,
};

struct Token {
  TokenKind kind;
  std::string text;
  int line;
};

// Throws parallm::Error ("chat template: ... at line N") on an unterminated
// tag, comment or string, or on a character no token starts with.
std::vector<Token> lex_template(std::string_view source);

}  // namespace parallm::chat
