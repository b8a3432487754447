// Lexer of the chat-template Jinja subset (see template_lexer.h). The
// whitespace rules follow jinja2/lexer.py 3.1: a tag's `-` strips all
// whitespace on that side; without it, `{%` and `{#` drop the spaces before
// them when only spaces precede them on their line (lstrip_blocks) and `%}` /
// `#}` eat one following newline (trim_blocks); `{{ }}` do neither.
#include "infer/chat/template_lexer.h"

#include <algorithm>
#include <array>
#include <cctype>

#include "base/error.h"
#include "infer/chat/template_text.h"

namespace parallm::chat {
namespace {

// Jinja splits the source on \r\n, \r and \n, drops one trailing empty line
// (keep_trailing_newline=False) and joins with \n.
std::string normalize_newlines(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\r') {
      out += '\n';
      if (i + 1 < s.size() && s[i + 1] == '\n') ++i;
    } else {
      out += s[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

int count_newlines(std::string_view s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

// Length of the Unicode whitespace run at s[pos...] (Python's \s).
size_t space_run(std::string_view s, size_t pos) {
  size_t end = pos;
  while (end < s.size()) {
    const size_t len = std::min<size_t>(4, s.size() - end);
    const std::vector<char32_t> cps = utf8_decode(s.substr(end, len));
    if (cps.empty() || !python_isspace(cps[0])) break;
    std::string one;
    utf8_append(one, cps[0]);
    end += one.size();
  }
  return end - pos;
}

bool all_space(std::string_view s) { return !s.empty() && space_run(s, 0) == s.size(); }

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Python's unicode-escape decoding, which Jinja applies to string literals.
std::string decode_escapes(std::string_view body, int line) {
  std::string out;
  for (size_t i = 0; i < body.size(); ++i) {
    if (body[i] != '\\' || i + 1 == body.size()) {
      out += body[i];
      continue;
    }
    const char c = body[++i];
    switch (c) {
      case '\n':
        break;  // line continuation
      case '\\':
      case '\'':
      case '"':
        out += c;
        break;
      case 'a':
        out += '\a';
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'v':
        out += '\v';
        break;
      case 'x':
      case 'u':
      case 'U': {
        const size_t digits = c == 'x' ? 2 : c == 'u' ? 4 : 8;
        char32_t cp = 0;
        for (size_t k = 0; k < digits; ++k) {
          const int h = i + 1 + k < body.size() ? hex_value(body[i + 1 + k]) : -1;
          PX_CHECK(h >= 0, "chat template: truncated \\{} escape in a string literal at line {}", c,
                   line);
          cp = cp * 16 + char32_t(h);
        }
        i += digits;
        utf8_append(out, cp);
        break;
      }
      default:
        if (c >= '0' && c <= '7') {
          char32_t cp = c - '0';
          for (int k = 0; k < 2 && i + 1 < body.size() && body[i + 1] >= '0' && body[i + 1] <= '7';
               ++k)
            cp = cp * 8 + char32_t(body[++i] - '0');
          utf8_append(out, cp);
        } else {
          PX_CHECK(c != 'N', "chat template: unsupported \\N{{...}} escape at line {}", line);
          out += '\\';
          out += c;
        }
    }
  }
  return out;
}

class Lexer {
 public:
  explicit Lexer(std::string_view source) : src_(normalize_newlines(source)) {}

  std::vector<Token> run() {
    while (pos_ < src_.size()) {
      size_t at = src_.size();
      for (std::string_view open : {"{{", "{%", "{#"}) at = std::min(at, src_.find(open, pos_));
      std::string text = src_.substr(pos_, at - pos_);
      const int text_line = line_;
      line_ += count_newlines(text);
      if (at == src_.size()) {
        push(TokenKind::Text, std::move(text), text_line);
        break;
      }
      const char kind = src_[at + 1];
      const char sign =
          at + 2 < src_.size() && (src_[at + 2] == '-' || src_[at + 2] == '+') ? src_[at + 2] : 0;
      if (sign == '-') {
        text = python_strip(text, std::nullopt, StripSide::Right);
      } else if (sign != '+' && kind != '{') {
        const size_t nl = text.rfind('\n');
        const size_t l_pos = nl == std::string::npos ? 0 : nl + 1;
        if ((l_pos > 0 || line_starting_) && all_space(std::string_view(text).substr(l_pos)))
          text.resize(l_pos);
      }
      push(TokenKind::Text, std::move(text), text_line);
      pos_ = at + 2 + (sign ? 1 : 0);
      if (kind == '#')
        comment();
      else
        tag(kind == '{');
    }
    tokens_.push_back({TokenKind::Eof, "", line_});
    return std::move(tokens_);
  }

 private:
  void push(TokenKind kind, std::string text, int line) {
    if (kind == TokenKind::Text && text.empty()) return;
    tokens_.push_back({kind, std::move(text), line});
  }

  // After a closing delimiter: `-` strips all following whitespace, a plain
  // block/comment end eats one newline (trim_blocks).
  void after_close(char sign, bool trims) {
    if (sign == '-') {
      const size_t n = space_run(src_, pos_);
      const std::string_view eaten = std::string_view(src_).substr(pos_, n);
      line_ += count_newlines(eaten);
      line_starting_ = !eaten.empty() && eaten.back() == '\n';
      pos_ += n;
    } else if (sign != '+' && trims && pos_ < src_.size() && src_[pos_] == '\n') {
      ++line_;
      ++pos_;
      line_starting_ = true;
    } else {
      line_starting_ = false;
    }
  }

  void comment() {
    const int start = line_;
    const size_t end = src_.find("#}", pos_);
    PX_CHECK(end != std::string::npos, "chat template: unterminated comment '{{#' at line {}",
             start);
    const char sign =
        end > pos_ && (src_[end - 1] == '-' || src_[end - 1] == '+') ? src_[end - 1] : 0;
    line_ += count_newlines(std::string_view(src_).substr(pos_, end - pos_));
    pos_ = end + 2;
    after_close(sign, true);
  }

  void tag(bool is_var) {
    const int start = line_;
    push(is_var ? TokenKind::VarBegin : TokenKind::BlockBegin, is_var ? "{{" : "{%", line_);
    int depth = 0;
    for (;;) {
      const size_t n = space_run(src_, pos_);
      line_ += count_newlines(std::string_view(src_).substr(pos_, n));
      pos_ += n;
      PX_CHECK(pos_ < src_.size(), "chat template: unterminated '{}' opened at line {}",
               is_var ? "{{" : "{%", start);
      const std::string_view rest = std::string_view(src_).substr(pos_);
      if (depth == 0) {
        const std::string_view close = is_var ? "}}" : "%}";
        for (char sign : {'-', '+', '\0'}) {
          if (is_var && sign == '+') continue;
          const std::string full =
              sign ? std::string(1, sign) + std::string(close) : std::string(close);
          if (rest.substr(0, full.size()) == full) {
            push(is_var ? TokenKind::VarEnd : TokenKind::BlockEnd, std::string(close), line_);
            pos_ += full.size();
            after_close(sign, !is_var);
            return;
          }
        }
      }
      read_token(rest, depth);
    }
  }

  void read_token(std::string_view rest, int& depth) {
    const char c = rest[0];
    if (c == '\'' || c == '"') {
      size_t i = 1;
      while (i < rest.size() && rest[i] != c) i += rest[i] == '\\' ? 2 : 1;
      PX_CHECK(i < rest.size(), "chat template: unterminated string literal at line {}", line_);
      const std::string_view body = rest.substr(1, i - 1);
      push(TokenKind::String, decode_escapes(body, line_), line_);
      line_ += count_newlines(body);
      pos_ += i + 1;
    } else if (c >= '0' && c <= '9') {
      size_t i = 0;
      bool is_float = false;
      while (i < rest.size() && ((rest[i] >= '0' && rest[i] <= '9') || rest[i] == '_')) ++i;
      if (i + 1 < rest.size() && rest[i] == '.' && rest[i + 1] >= '0' && rest[i + 1] <= '9') {
        is_float = true;
        ++i;
        while (i < rest.size() && rest[i] >= '0' && rest[i] <= '9') ++i;
      }
      if (i < rest.size() && (rest[i] == 'e' || rest[i] == 'E')) {
        size_t j = i + 1;
        if (j < rest.size() && (rest[j] == '+' || rest[j] == '-')) ++j;
        if (j < rest.size() && rest[j] >= '0' && rest[j] <= '9') {
          is_float = true;
          i = j;
          while (i < rest.size() && rest[i] >= '0' && rest[i] <= '9') ++i;
        }
      }
      std::string digits;
      for (char d : rest.substr(0, i))
        if (d != '_') digits += d;
      push(is_float ? TokenKind::Float : TokenKind::Int, digits, line_);
      pos_ += i;
    } else if (c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
      size_t i = 0;
      while (i < rest.size() &&
             (rest[i] == '_' || std::isalnum(static_cast<unsigned char>(rest[i]))))
        ++i;
      push(TokenKind::Name, std::string(rest.substr(0, i)), line_);
      pos_ += i;
    } else {
      static constexpr std::array<std::string_view, 6> kTwo = {"//", "**", "==", "!=", "<=", ">="};
      for (std::string_view op : kTwo) {
        if (rest.substr(0, 2) == op) {
          push(TokenKind::Op, std::string(op), line_);
          pos_ += 2;
          return;
        }
      }
      static constexpr std::string_view kOne = "+-*/%~()[]{},.:|=<>";
      PX_CHECK(kOne.find(c) != std::string_view::npos,
               "chat template: unexpected character '{}' at line {}", c, line_);
      if (c == '(' || c == '[' || c == '{') ++depth;
      if (c == ')' || c == ']' || c == '}') --depth;
      push(TokenKind::Op, std::string(1, c), line_);
      pos_ += 1;
    }
  }

  std::string src_;
  size_t pos_ = 0;
  int line_ = 1;
  bool line_starting_ = true;
  std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> lex_template(std::string_view source) { return Lexer(source).run(); }

}  // namespace parallm::chat
