// The tool fields of a chat request, checked: OpenAI's `tools` (each
// {"type": "function", "function": {"name", "description", "parameters"}}),
// `tool_choice` ("none", "auto", "required" or {"type": "function",
// "function": {"name"}}) and, in the conversation, an assistant turn's
// `tool_calls`. A field of the wrong shape, a parameters schema the JSON-schema
// compiler refuses, or a tool_choice naming no tool is ApiError 400 naming the
// field. Invariant: tools_json is the list as the client wrote it (key order
// kept), which is what the chat template renders.
#pragma once
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "infer/chat/chat_template.h"
#include "infer/serve/request_fields.h"

namespace parallm::serve {

enum class ToolChoice { None, Auto, Required, Named };

// How a model family writes a tool call (tool_call_text.h reads and constrains
// each): Hermes/Qwen2 `<tool_call>\n{"name", "arguments"}\n</tool_call>`,
// Llama-3 `{"name", "parameters"}`, Mistral `[TOOL_CALLS] [{"name",
// "arguments"}]`, and plain `{"name", "arguments"}` for any other template.
enum class ToolFormat { Json, Hermes, Llama3, Mistral };

struct ToolSpec {
  std::string name;
  nlohmann::ordered_json parameters;  // a JSON schema; {"type": "object"} when not given
};

struct ToolRequest {
  std::vector<ToolSpec> tools;
  std::string tools_json;  // "" without tools
  ToolChoice choice = ToolChoice::None;
  std::string forced;                    // Named: the function's name
  ToolFormat format = ToolFormat::Json;  // set once the model's template is known
  bool parallel = true;                  // parallel_tool_calls: false forces one call
  // Whether the output is read for tool calls / must be one.
  bool active() const { return choice != ToolChoice::None && !tools.empty(); }
  bool constrained() const { return choice == ToolChoice::Required || choice == ToolChoice::Named; }
};

// ordered_tools: the body's `tools` parsed keeping key order, or null.
ToolRequest parse_tool_fields(const RequestFields& f, const nlohmann::ordered_json* ordered_tools);

// An assistant message's tool_calls (m: the message's fields); [] when absent.
std::vector<ChatToolCall> parse_message_tool_calls(const RequestFields& m);

}  // namespace parallm::serve
