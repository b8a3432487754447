// Streaming chunks (see stream_chunks.h).
#include "infer/serve/stream_chunks.h"

namespace parallm::serve {

std::string sse_event(const nlohmann::json& data) { return "data: " + dump_body(data) + "\n\n"; }

std::string sse_done() { return "data: [DONE]\n\n"; }

namespace {
nlohmann::json chunk(const ResponseMeta& meta, const char* object, nlohmann::json choice,
                     bool include_usage) {
  nlohmann::json j{{"id", meta.id},
                   {"object", object},
                   {"created", meta.created},
                   {"model", meta.model},
                   {"choices", nlohmann::json::array({std::move(choice)})}};
  if (include_usage) j["usage"] = nullptr;
  return j;
}

nlohmann::json finish_json(const ChunkChoice& c) {
  if (c.finish && c.finish_tool_calls) return "tool_calls";
  return c.finish ? nlohmann::json(api_finish_reason(*c.finish)) : nlohmann::json();
}
}  // namespace

nlohmann::json chat_chunk(const ResponseMeta& meta, const ChunkChoice& c, bool include_usage) {
  nlohmann::json delta = nlohmann::json::object();
  if (c.role) delta["role"] = "assistant";
  if (c.text) delta["content"] = *c.text;
  if (!c.tool_calls.is_null()) delta["tool_calls"] = c.tool_calls;
  return chunk(meta, "chat.completion.chunk",
               {{"index", c.index},
                {"delta", std::move(delta)},
                {"logprobs", c.logprobs},
                {"finish_reason", finish_json(c)}},
               include_usage);
}

nlohmann::json completion_chunk(const ResponseMeta& meta, const ChunkChoice& c,
                                bool include_usage) {
  return chunk(meta, "text_completion",
               {{"index", c.index},
                {"text", c.text.value_or("")},
                {"logprobs", c.logprobs},
                {"finish_reason", finish_json(c)}},
               include_usage);
}

nlohmann::json usage_chunk(const ResponseMeta& meta, const std::string& object,
                           const Usage& usage) {
  return {{"id", meta.id},
          {"object", object},
          {"created", meta.created},
          {"model", meta.model},
          {"choices", nlohmann::json::array()},
          {"usage", usage_json(usage)}};
}

}  // namespace parallm::serve
