// The server-sent events of a streamed request: chat.completion.chunk and
// text_completion chunks, the usage chunk (choices: []) and the closing
// `data: [DONE]`. Each event is "data: <json>\n\n". Chat: a choice's first
// chunk carries the role, its last one the finish_reason with an empty
// delta ("tool_calls" after chunks of delta.tool_calls). Invariant: when the
// client asked for usage, every chunk but the usage one has "usage": null,
// as OpenAI sends them.
#pragma once
#include <nlohmann/json.hpp>

#include <optional>
#include <string>

#include "infer/serve/api_response.h"

namespace parallm::serve {

std::string sse_event(const nlohmann::json& data);
std::string sse_done();

struct ChunkChoice {
  size_t index = 0;
  bool role = false;                   // chat: the first chunk of the choice
  std::optional<std::string> text;     // chat: delta.content; completions: text
  nlohmann::json logprobs;             // null when none
  std::optional<FinishReason> finish;  // the choice's last chunk
  nlohmann::json tool_calls;           // chat: delta.tool_calls, null when none
  bool finish_tool_calls = false;      // finish_reason "tool_calls" instead of finish's
};

nlohmann::json chat_chunk(const ResponseMeta& meta, const ChunkChoice& c, bool include_usage);
nlohmann::json completion_chunk(const ResponseMeta& meta, const ChunkChoice& c, bool include_usage);
// object: "chat.completion.chunk" or "text_completion".
nlohmann::json usage_chunk(const ResponseMeta& meta, const std::string& object, const Usage& usage);

}  // namespace parallm::serve
