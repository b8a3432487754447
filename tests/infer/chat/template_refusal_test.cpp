// Every refusal of the chat-template interpreter: constructs outside the
// subset fail when the template is parsed, naming the construct and its line;
// bad values fail at render naming the value. Nothing renders approximately.
#include <gtest/gtest.h>

#include "infer/chat/template_parser.h"
#include "infer/chat/template_renderer.h"

namespace parallm::chat {
namespace {

std::string parse_error(std::string_view source) {
  try {
    parse_template(source);
  } catch (const Error& e) {
    return e.what();
  }
  return "(parsed)";
}

std::string render_error(std::string_view source) {
  try {
    render_template(parse_template(source), {});
  } catch (const Error& e) {
    return e.what();
  }
  return "(rendered)";
}

TEST(ChatTemplateRefusal, UnknownConstructsByName) {
  EXPECT_EQ(parse_error("a\nb\n{{ x | xyz }}"),
            "chat template: unsupported filter 'xyz' at line 3");
  EXPECT_EQ(parse_error("{{ x | map('upper') }}"),
            "chat template: unsupported filter 'map' at line 1");
  EXPECT_EQ(parse_error("{% if x is sameas(y) %}{% endif %}"),
            "chat template: unsupported test 'sameas' at line 1");
  EXPECT_EQ(parse_error("\n{% macro m() %}{% endmacro %}"),
            "chat template: unsupported tag 'macro' at line 2");
  EXPECT_EQ(parse_error("{% include 'x' %}"), "chat template: unsupported tag 'include' at line 1");
  EXPECT_EQ(parse_error("{% raw %}{% endraw %}"), "chat template: unsupported tag 'raw' at line 1");
  EXPECT_EQ(parse_error("{{ strftime_now('%d') }}"),
            "chat template: unsupported function 'strftime_now' at line 1");
  EXPECT_EQ(parse_error("{{ messages.append(1) }}"),
            "chat template: unsupported method 'append' at line 1");
  EXPECT_EQ(parse_error("{% set x %}a{% endset %}"),
            "chat template: unsupported block set ('{% set x %}...{% endset %}') at line 1");
  EXPECT_EQ(parse_error("{% for x in xs recursive %}{% endfor %}"),
            "chat template: unsupported recursive for loop at line 1");
}

TEST(ChatTemplateRefusal, MalformedTemplates) {
  EXPECT_EQ(parse_error("{% if x %}a"), "chat template: missing '{% endif %}' at end of template");
  EXPECT_EQ(parse_error("a{% endif %}"), "chat template: unexpected '{% endif %}' at line 1");
  EXPECT_EQ(parse_error("{{ 'abc }}"), "chat template: unterminated string literal at line 1");
  EXPECT_EQ(parse_error("x\n{{ a + "), "chat template: unterminated '{{' opened at line 2");
  EXPECT_EQ(parse_error("{# never closed"), "chat template: unterminated comment '{#' at line 1");
  EXPECT_EQ(parse_error("{{ a + }}"), "chat template: expected an expression, got '}}' at line 1");
  EXPECT_EQ(parse_error("{{ a $ b }}"), "chat template: unexpected character '$' at line 1");
  EXPECT_EQ(parse_error("{% for x of xs %}{% endfor %}"),
            "chat template: expected 'in', got 'of' at line 1");
}

TEST(ChatTemplateRefusal, BadValuesAtRender) {
  EXPECT_EQ(render_error("{{ u.v }}"), "chat template: 'u' is undefined (at line 1)");
  EXPECT_EQ(render_error("{{ 'a' + 1 }}"),
            "chat template: unsupported operand types for +: 'str' and 'int' at line 1");
  EXPECT_EQ(render_error("{{ 'a' + u }}"), "chat template: 'u' is undefined (at line 1)");
  EXPECT_EQ(render_error("{{ '%s' % 'x' }}"),
            "chat template: unsupported string formatting with '%' at line 1");
  EXPECT_EQ(render_error("{{ 'é' | upper }}"),
            "chat template: upper supports ASCII text only (Python's Unicode case tables are not "
            "carried) at line 1");
  EXPECT_EQ(render_error("{% set x = 1 %}{% set x.y = 2 %}"),
            "chat template: cannot assign attribute on non-namespace object 'x' (int) at line 1");
  EXPECT_EQ(render_error("{% for x in 3 %}{% endfor %}"),
            "chat template: 'int' object is not iterable at line 1");
  EXPECT_EQ(render_error("{{ 1 // 0 }}"), "chat template: division by zero at line 1");
  EXPECT_EQ(render_error("{{ raise_exception('bad roles') }}"),
            "chat template: raise_exception: bad roles");
}

}  // namespace
}  // namespace parallm::chat
