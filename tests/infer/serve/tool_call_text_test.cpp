// Tool-call text: the format each template asks for, the grammar that forces
// calls (one named, up to four under required; the family's form with valid
// arguments, other names and bad arguments refused), the calls parsed back
// out of text in every format, and the OpenAI output built from them.
#include <gtest/gtest.h>

#include "infer/serve/api_request.h"
#include "infer/serve/tool_call_output.h"
#include "infer/serve/tool_call_text.h"
#include "infer/structured/grammar_automaton.h"

namespace parallm::serve {
namespace {

std::vector<ToolSpec> tools() {
  return {{"get_weather", nlohmann::ordered_json::parse(
                              R"({"type": "object", "properties": {"city": {"type": "string"},
                                  "days": {"type": "integer"}}, "required": ["city"]})")},
          {"now", nlohmann::ordered_json::parse(R"({"type": "object"})")}};
}

bool accepts(ToolFormat f, const std::string& only, const std::string& text,
             int max_calls = kMaxForcedCalls) {
  structured::GrammarAutomaton a(
      structured::compile_grammar(tool_call_grammar(f, tools(), only, max_calls)));
  const int32_t s = a.next(a.start(), text);
  return s != structured::GrammarAutomaton::kDead && a.can_end(s);
}

TEST(ToolCallText, FormatOfTemplate) {
  EXPECT_EQ(tool_format_of("{{- '<tool_call>\\n' }}"), ToolFormat::Hermes);
  EXPECT_EQ(tool_format_of("{{ '[TOOL_CALLS] ' }}"), ToolFormat::Mistral);
  EXPECT_EQ(tool_format_of("<|start_header_id|>ipython{% if tools %}"), ToolFormat::Llama3);
  EXPECT_EQ(tool_format_of("{{ message['content'] }}"), ToolFormat::Json);
}

TEST(ToolCallText, GrammarForcesValidCalls) {
  EXPECT_TRUE(accepts(ToolFormat::Hermes, "",
                      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
                      "{\"city\": \"Oslo\", \"days\": 2}}\n</tool_call>"));
  EXPECT_TRUE(accepts(ToolFormat::Json, "", R"({"name": "now", "arguments": {}})"));
  EXPECT_TRUE(accepts(ToolFormat::Llama3, "get_weather",
                      R"({"name": "get_weather", "parameters": {"city": "x"}})"));
  EXPECT_TRUE(
      accepts(ToolFormat::Mistral, "", R"([TOOL_CALLS] [{"name": "now", "arguments": {}}])"));
  EXPECT_FALSE(accepts(ToolFormat::Json, "get_weather", R"({"name": "now", "arguments": {}})"));
  EXPECT_FALSE(accepts(ToolFormat::Json, "", R"({"name": "get_weather", "arguments": {}})"));
  EXPECT_FALSE(accepts(ToolFormat::Json, "", R"({"name": "other", "arguments": {}})"));
  EXPECT_FALSE(accepts(ToolFormat::Hermes, "", R"({"name": "now", "arguments": {}})"));
  // "required" may call several where the form holds them; a named function once.
  const std::string two =
      "<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>\n"
      "<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>";
  EXPECT_TRUE(accepts(ToolFormat::Hermes, "", two));
  EXPECT_FALSE(accepts(ToolFormat::Hermes, "now", two));
  EXPECT_FALSE(accepts(ToolFormat::Hermes, "", two, 1));  // parallel_tool_calls: false
  EXPECT_TRUE(accepts(
      ToolFormat::Mistral, "",
      R"([TOOL_CALLS] [{"name": "now", "arguments": {}}, {"name": "now", "arguments": {}}])"));
  EXPECT_FALSE(accepts(ToolFormat::Json, "",
                       R"({"name": "now", "arguments": {}}{"name": "now", "arguments": {}})"));
}

TEST(ToolCallText, ParsesEachFormat) {
  const ToolCallParse h = parse_tool_calls(
      ToolFormat::Hermes,
      "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
      "\"Oslo\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>",
      tools());
  ASSERT_EQ(h.calls.size(), 2u);
  EXPECT_EQ(h.calls[0].name, "get_weather");
  EXPECT_EQ(h.calls[0].arguments, R"({"city":"Oslo"})");
  EXPECT_EQ(h.calls[1].name, "now");
  EXPECT_EQ(h.content, "Let me check.");
  const ToolCallParse l = parse_tool_calls(
      ToolFormat::Llama3, R"(<|python_tag|>{"name": "now", "parameters": {}})", tools());
  ASSERT_EQ(l.calls.size(), 1u);
  EXPECT_FALSE(l.content.has_value());
  const ToolCallParse m = parse_tool_calls(
      ToolFormat::Mistral, R"([TOOL_CALLS] [{"name": "now", "arguments": {}}])", tools());
  EXPECT_EQ(m.calls.size(), 1u);
  const ToolCallParse j = parse_tool_calls(
      ToolFormat::Json, R"( [{"name": "now", "arguments": {}}, {"name": "now", "arguments": {}}])",
      tools());
  EXPECT_EQ(j.calls.size(), 2u);
  // Not a call: the whole text is content.
  for (const char* text : {"plain words", R"({"name": "unknown", "arguments": {}})",
                           "<tool_call>\n{\"name\": \"now\", \"arguments\": {\n</tool_call>"}) {
    const ToolCallParse p = parse_tool_calls(ToolFormat::Hermes, text, tools());
    EXPECT_TRUE(p.calls.empty()) << text;
    EXPECT_EQ(p.content, text);
  }
}

TEST(ToolCallText, OutputInOpenAIShape) {
  ApiRequest req;
  req.tools.tools = tools();
  req.tools.choice = ToolChoice::Auto;
  const std::string text = R"({"name": "now", "arguments": {}})";
  const ToolCallOutput o = tool_call_output(req, text, false, "chatcmpl-abc", 2);
  ASSERT_EQ(o.calls.size(), 1u);
  EXPECT_EQ(o.calls[0]["id"], "call_abc_2_0");
  EXPECT_EQ(o.calls[0]["type"], "function");
  EXPECT_EQ(o.calls[0]["function"]["name"], "now");
  EXPECT_EQ(o.calls[0]["function"]["arguments"], "{}");
  EXPECT_FALSE(o.content.has_value());
  EXPECT_EQ(tool_call_header_delta(o.calls[0], 0)["function"]["arguments"], "");
  EXPECT_EQ(tool_call_arguments_delta(o.calls[0], 0)["function"]["arguments"], "{}");
  req.tools.format = ToolFormat::Mistral;  // its template wants 9 alphanumerics
  const std::string mistral_id =
      tool_call_output(req, "[TOOL_CALLS] " + text, false, "chatcmpl-abc", 0).calls[0]["id"];
  EXPECT_EQ(mistral_id.size(), 9u);
  req.tools.format = ToolFormat::Json;
  // Cut by length, or tool_choice none: the text is content.
  EXPECT_TRUE(tool_call_output(req, text, true, "chatcmpl-abc", 0).calls.empty());
  req.tools.choice = ToolChoice::None;
  EXPECT_EQ(tool_call_output(req, text, false, "chatcmpl-abc", 0).content, text);
}

}  // namespace
}  // namespace parallm::serve
