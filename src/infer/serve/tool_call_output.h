// A finished chat choice's text as OpenAI returns tool calls: message
// tool_calls [{"id": "call_...", "type": "function", "function": {"name",
// "arguments": JSON text}}], content null when the text was only calls, and
// finish_reason "tool_calls". Both the body and the stream are built from it,
// so they agree on ids and arguments.
#pragma once
#include <nlohmann/json.hpp>

#include <optional>
#include <string>

#include "infer/serve/api_request.h"

namespace parallm::serve {

struct ToolCallOutput {
  std::optional<std::string> content;              // null: no text besides the calls
  nlohmann::json calls = nlohmann::json::array();  // empty: no call was made
};

// Reads calls only when the request offered tools (tool_choice not "none")
// and the choice ended on its own (a length cut-off leaves a call unfinished);
// otherwise the text is all content. Ids: "call_" + the response id's tail +
// the choice and call numbers, unique within the response and stable (for
// Mistral's format 9 alphanumerics hashed from the same, as its template needs).
ToolCallOutput tool_call_output(const ApiRequest& req, const std::string& text, bool cut_by_length,
                                const std::string& response_id, size_t choice);

// The stream's delta.tool_calls entries of one call: its header (index, id,
// type, name, empty arguments) then its arguments, as OpenAI splits them.
nlohmann::json tool_call_header_delta(const nlohmann::json& call, size_t index);
nlohmann::json tool_call_arguments_delta(const nlohmann::json& call, size_t index);

}  // namespace parallm::serve
