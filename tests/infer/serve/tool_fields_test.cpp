// Parsing the tool fields of a chat request: tools (key order kept for the
// template), tool_choice's four forms and its default, assistant tool_calls
// and tool messages in the conversation, and a 400 naming the field for each
// bad shape.
#include <gtest/gtest.h>

#include "infer/serve/api_error.h"
#include "infer/serve/api_request.h"

namespace parallm::serve {
namespace {

const char* kTools = R"("tools": [{"type": "function", "function": {"name": "get_weather",
    "description": "d", "parameters": {"type": "object", "properties":
    {"zeta": {"type": "string"}, "alpha": {"type": "integer"}}, "required": ["zeta"]}}},
    {"type": "function", "function": {"name": "now"}}])";

ApiRequest chat(const std::string& extra) {
  return parse_request(Endpoint::Chat,
                       R"({"messages": [{"role": "user", "content": "hi"}], )" + extra + "}");
}

// The param of the 400 a chat body with `extra` gets ("" when accepted).
std::string refused_param(const std::string& extra) {
  try {
    chat(extra);
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status, 400);
    return e.param;
  }
  return "";
}

TEST(ToolFields, ToolsAndChoices) {
  const ApiRequest r = chat(kTools);
  ASSERT_EQ(r.tools.tools.size(), 2u);
  EXPECT_EQ(r.tools.tools[0].name, "get_weather");
  EXPECT_EQ(r.tools.choice, ToolChoice::Auto);  // the default with tools
  EXPECT_TRUE(r.tools.active());
  EXPECT_FALSE(r.tools.constrained());
  // The list reaches the template as written: properties unsorted.
  EXPECT_LT(r.tools.tools_json.find("zeta"), r.tools.tools_json.find("alpha"));
  EXPECT_EQ(r.tools.tools[1].parameters.dump(), R"({"type":"object"})");
  EXPECT_EQ(chat(std::string(kTools) + R"(, "tool_choice": "required")").tools.choice,
            ToolChoice::Required);
  EXPECT_FALSE(chat(std::string(kTools) + R"(, "tool_choice": "none")").tools.active());
  const ApiRequest n =
      chat(std::string(kTools) +
           R"(, "tool_choice": {"type": "function", "function": {"name": "now"}})");
  EXPECT_EQ(n.tools.choice, ToolChoice::Named);
  EXPECT_EQ(n.tools.forced, "now");
  EXPECT_EQ(chat(R"("tools": [])").tools.choice, ToolChoice::None);
  EXPECT_TRUE(r.tools.parallel);
  EXPECT_FALSE(chat(std::string(kTools) + R"(, "parallel_tool_calls": false)").tools.parallel);
  EXPECT_FALSE(chat(R"("tool_choice": "auto")").tools.active());
}

TEST(ToolFields, ConversationWithCalls) {
  const ApiRequest r = parse_request(Endpoint::Chat, R"({"messages": [
    {"role": "user", "content": "weather?"},
    {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
      "function": {"name": "get_weather", "arguments": "{\"zeta\": \"x\"}"}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "sunny"}]})");
  ASSERT_EQ(r.messages.size(), 3u);
  ASSERT_EQ(r.messages[1].tool_calls.size(), 1u);
  EXPECT_EQ(r.messages[1].content, "");
  EXPECT_EQ(r.messages[1].tool_calls[0].id, "call_1");
  EXPECT_EQ(r.messages[1].tool_calls[0].name, "get_weather");
  EXPECT_EQ(r.messages[1].tool_calls[0].arguments, R"({"zeta": "x"})");
  EXPECT_EQ(r.messages[2].role, "tool");
  EXPECT_EQ(r.messages[2].tool_call_id, "call_1");
}

TEST(ToolFields, BadShapesNameTheField) {
  EXPECT_EQ(refused_param(R"("tools": {"type": "function"})"), "tools");
  EXPECT_EQ(refused_param(R"("tools": [3])"), "tools[0]");
  EXPECT_EQ(refused_param(R"("tools": [{"type": "retrieval", "function": {"name": "f"}}])"),
            "tools[0].type");
  EXPECT_EQ(refused_param(R"("tools": [{"type": "function"}])"), "tools[0].function");
  EXPECT_EQ(refused_param(R"("tools": [{"type": "function", "function": {"name": "a b"}}])"),
            "tools[0].function.name");
  EXPECT_EQ(refused_param(R"("tools": [{"type": "function", "function": {"name": "f",
      "parameters": {"type": "number", "multipleOf": 3}}}])"),
            "tools[0].function.parameters");
  EXPECT_EQ(refused_param(R"("tools": [{"type": "function", "function": {"name": "f"}},
                                       {"type": "function", "function": {"name": "f"}}])"),
            "tools[1].function.name");
  EXPECT_EQ(refused_param(R"("tool_choice": "required")"), "tool_choice");
  EXPECT_EQ(refused_param(std::string(kTools) + R"(, "tool_choice": "always")"), "tool_choice");
  EXPECT_EQ(refused_param(std::string(kTools) +
                          R"(, "tool_choice": {"type": "function", "function": {"name": "x"}})"),
            "tool_choice.function.name");
  EXPECT_EQ(
      refused_param(std::string(kTools) +
                    R"(, "tool_choice": "required", "response_format": {"type": "json_object"})"),
      "tool_choice");
  auto message_param = [](const std::string& messages) {
    try {
      parse_request(Endpoint::Chat, R"({"messages": )" + messages + "}");
    } catch (const ApiError& e) {
      return e.param;
    }
    return std::string();
  };
  EXPECT_EQ(message_param(R"([{"role": "tool", "content": "x"}])"), "messages[0].tool_call_id");
  EXPECT_EQ(message_param(R"([{"role": "assistant", "tool_calls": [{"function": {"name": "f",
      "arguments": "{not json"}}]}])"),
            "messages[0].tool_calls[0].function.arguments");
  EXPECT_EQ(message_param(R"([{"role": "assistant", "tool_calls": [{"function": {}}]}])"),
            "messages[0].tool_calls[0].function.name");
  EXPECT_EQ(message_param(R"([{"role": "robot", "content": "x"}])"), "messages[0].role");
}

}  // namespace
}  // namespace parallm::serve
