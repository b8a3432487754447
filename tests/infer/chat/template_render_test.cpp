// The chat-template interpreter piece by piece: whitespace control, scoping,
// loops, operators, filters, tests, methods and Python's printing of values.
// Every expected string here is what Jinja2 3.1 (as transformers configures
// it) renders for the same source; the reference test covers whole templates.
#include <gtest/gtest.h>

#include "infer/chat/template_parser.h"
#include "infer/chat/template_renderer.h"
#include "infer/chat/template_text.h"

namespace parallm::chat {
namespace {

std::string render(std::string_view source, const Dict& globals = {}) {
  return render_template(parse_template(source), globals);
}

Value strings(std::initializer_list<const char*> items) {
  List out;
  for (const char* s : items) out.push_back(Value::string(s));
  return Value::list(std::move(out));
}

TEST(ChatTemplateRender, TextAndTrailingNewline) {
  EXPECT_EQ(render("hello\n"), "hello");  // keep_trailing_newline=False drops one
  EXPECT_EQ(render("hello\n\n"), "hello\n");
  EXPECT_EQ(render("a\r\nb"), "a\nb");  // newlines normalised as Jinja does
}

TEST(ChatTemplateRender, SelectAndReject) {
  const Dict g = {{"xs", strings({"a", "code_interpreter", "", "b"})}};
  EXPECT_EQ(render("{{ xs | reject('equalto', 'code_interpreter') | join(', ') }}", g), "a, , b");
  EXPECT_EQ(render("{{ xs | select | join(',') }}", g), "a,code_interpreter,b");
  EXPECT_EQ(render("{{ xs | select('eq', 'b') | list }}", g), "['b']");
}

TEST(ChatTemplateRender, TrimAndLstripBlocks) {
  EXPECT_EQ(render("  {% if true %}\n  x\n  {% endif %}\n"), "  x\n");
  EXPECT_EQ(render("a\n{# c #}\nb"), "a\nb");
  EXPECT_EQ(render("a  \n  {%- if true -%}  \n  b  {%+ if true %}c{% endif %}\n{% endif %}\nd\n"),
            "ab  cd");
  EXPECT_EQ(render("x {{ 1 }}\n{{- 2 -}} \n y"), "x 12y");  // {{ }} neither trims nor lstrips
}

TEST(ChatTemplateRender, LoopVariables) {
  EXPECT_EQ(render("{% for x in xs %}{{ loop.index0 }}{{ loop.index }}{{ loop.first }}"
                   "{{ loop.last }}{{ loop.length }};{% endfor %}",
                   {{"xs", strings({"a", "b"})}}),
            "01TrueFalse2;12FalseTrue2;");
  EXPECT_EQ(render("{% for x in [] %}x{% else %}empty{% endfor %}"), "empty");
  EXPECT_EQ(render("{% for x in [1,2,3,4] if x is even %}{{ x }}{{ loop.length }}{% endfor %}"),
            "2242");
  EXPECT_EQ(render("{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}",
                   {{"d", Value::dict({{"a", Value::integer(1)}, {"b", Value::integer(2)}})}}),
            "a=1;b=2;");
}

TEST(ChatTemplateRender, Scoping) {
  // A set inside a loop body lasts one iteration; inside an if it is not scoped.
  EXPECT_EQ(
      render("{% set x = 1 %}{% for i in [1,2] %}{{ x }}{% set x = i + 10 %}{% endfor %}{{ x }}"),
      "111");
  EXPECT_EQ(render("{% for i in [1,2] %}{% set y = i %}{% endfor %}{{ y }}"), "");
  EXPECT_EQ(render("{% if true %}{% set z = 5 %}{% endif %}{{ z }}"), "5");
  EXPECT_EQ(render("{% set ns = namespace(n=0) %}{% for i in [1,2,3] %}{% set ns.n = ns.n + i %}"
                   "{% endfor %}{{ ns.n }}"),
            "6");
}

TEST(ChatTemplateRender, SubscriptsAndSlices) {
  const Dict g = {{"xs", Value::list({Value::integer(1), Value::integer(2), Value::integer(3)})}};
  EXPECT_EQ(render("{{ xs[::-1] }}{{ xs[1:] }}{{ xs[-1] }}{{ 'héllo'[1:3] }}{{ xs[5] }}|", g),
            "[3, 2, 1][2, 3]3él|");
  const Dict m = {{"m", Value::dict({{"role", Value::string("user")}})}};
  EXPECT_EQ(render("{{ m['role'] }}{{ m.role }}{{ m.missing }}{{ m.get('x', 'd') }}", m),
            "useruserd");
}

TEST(ChatTemplateRender, OperatorsFollowPython) {
  EXPECT_EQ(render("{{ 'a' + ' b ' | trim + 'c' }}"), "abc");  // the filter binds first
  EXPECT_EQ(render("{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ 2 ** 10 }} {{ 'ab' * 2 }} {{ 1 ~ 'x' "
                   "~ none }}"),
            "3 -4 1 1024 abab 1xNone");
  EXPECT_EQ(render("{{ '' or 'd' }}{{ 'a' and 'b' }}{{ 0 or none }}"), "dbNone");
  EXPECT_EQ(render("{{ 'x' if 1 > 2 else 'y' }}{{ 3 in [1, 3] }}{{ 'b' in 'abc' }}{{ 'k' not in "
                   "{'k': 1} }}"),
            "yTrueTrueFalse");
  EXPECT_EQ(render("{{ 1 == 1.0 }}{{ true == 1 }}{{ 'a' != false }}{{ (1 + 2) * 3 }}"),
            "TrueTrueTrue9");
}

TEST(ChatTemplateRender, PrintsValuesAsPython) {
  EXPECT_EQ(render("{{ [1, 'a', none, true, {'k': 'v'}] }}"), "[1, 'a', None, True, {'k': 'v'}]");
  EXPECT_EQ(render("{{ \"it's\" }}{{ ['it\\'s', \"q\\\"\"] }}"), "it's[\"it's\", 'q\"']");
  EXPECT_EQ(render("{{ 0.1 + 0.2 }} {{ 1e20 }} {{ 1.0 }} {{ 1/3 }} {{ 2.5e-7 }}"),
            "0.30000000000000004 1e+20 1.0 0.3333333333333333 2.5e-07");
}

TEST(ChatTemplateRender, TestsFiltersAndMethods) {
  EXPECT_EQ(render("{{ x is defined }}{{ none is none }}{{ 'a' is string }}{{ 1 is number }}"
                   "{{ x is not defined }}"),
            "FalseTrueTrueTrueTrue");
  EXPECT_EQ(render("{{ ['a', 'b'] | join(', ') }}{{ x | default('dflt') }}{{ [3,4] | first }}"
                   "{{ 'abc' | length }}{{ range(3) | list }}"),
            "a, bdflt33[0, 1, 2]");
  EXPECT_EQ(render("{{ 'a,b,,c'.split(',') }}{{ ' a  b '.split() }}{{ 'aXbX'.replace('X', '-') }}"
                   "{{ 'Hi'.startswith('H') }}"),
            "['a', 'b', '', 'c']['a', 'b']a-b-True");
  EXPECT_EQ(render("{{ 'ROLE'.lower() }}{{ 'user' | capitalize }}{{ 'x' | upper }}"), "roleUserX");
}

TEST(ChatTemplateRender, TrimIsPythonStrip) {
  // U+00A0 and U+3000 are whitespace to Python's str.strip(), so to `| trim`.
  EXPECT_EQ(render("{{ '\u00a0 x \u3000' | trim }}|{{ ' y '.strip() }}|{{ 'xxay'.lstrip('x') }}"),
            "x|y|ay");
  EXPECT_EQ(python_strip("\t\n é \u2003", std::nullopt, StripSide::Both), "é");
  EXPECT_EQ(python_len("héllo"), 5);
}

TEST(ChatTemplateRender, ToJsonAsTransformers) {
  // transformers' tojson: json.dumps(ensure_ascii=False), no HTML escaping.
  EXPECT_EQ(render("{{ {'a': [1, 2], 'é': 'ü\"<'} | tojson }}"),
            "{\"a\": [1, 2], \"é\": \"ü\\\"<\"}");
  EXPECT_EQ(render("{{ {'a': [1, 2]} | tojson(indent=2) }}"),
            "{\n  \"a\": [\n    1,\n    2\n  ]\n}");
}

TEST(ChatTemplateRender, RaiseExceptionCarriesTheMessage) {
  try {
    render("{% if true %}{{ raise_exception('Conversation roles must alternate') }}{% endif %}");
    FAIL() << "expected TemplateRaised";
  } catch (const TemplateRaised& e) {
    EXPECT_EQ(e.message(), "Conversation roles must alternate");
  }
}

}  // namespace
}  // namespace parallm::chat
