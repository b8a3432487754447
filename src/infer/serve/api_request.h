// ApiRequest: one OpenAI request (POST /v1/chat/completions or
// /v1/completions) read from its JSON body and checked. Unknown fields are
// ignored, as OpenAI-compatible servers do; a known field of the wrong type
// or out of range, a missing required field, or a feature the server does
// not have (echo, best_of != n, images) throws ApiError 400 naming the
// field; tools and tool_choice are read by tool_fields.h. null counts as
// absent. Nothing here knows the model: the prompt length and the model name
// are checked where the model is known. A structured-output field
// (structured_fields.h) is compiled here, so a bad schema, regex or grammar
// is a 400 before anything is queued.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "infer/chat/chat_template.h"
#include "infer/sampling_params.h"
#include "infer/serve/tool_fields.h"
#include "infer/structured/byte_grammar.h"

namespace parallm {
struct LoraFactorTable;  // nn/row_lora.h
}

namespace parallm::serve {

enum class Endpoint { Chat, Completion };

// A completions prompt: text to encode, or token ids given as they are.
struct PromptInput {
  std::string text;
  std::vector<int32_t> ids;
  bool is_ids = false;
};

struct ApiRequest {
  Endpoint endpoint = Endpoint::Chat;
  std::string model;                  // "" when not given
  std::vector<ChatMessage> messages;  // chat
  std::vector<PromptInput> prompts;   // completions: one or more
  std::optional<int64_t> max_tokens;  // max_completion_tokens, else max_tokens
  SamplingParams sampling;            // sampling.logprobs: alternatives per token
  bool seed_given = false;
  int64_t n = 1;
  std::vector<std::string> stop;
  bool logprobs = false;  // report each token's log-probability
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  // The output's grammar (response_format, structured_outputs); null: free.
  std::shared_ptr<const structured::ByteGrammar> grammar;
  ToolRequest tools;  // chat: tools, tool_choice
  // Set by the server when `model` names a served LoRA adapter (lora_registry.h).
  std::shared_ptr<const LoraFactorTable> lora;
  uint64_t lora_salt = 0;
};

inline constexpr int64_t kMaxChoices = 64;     // n
inline constexpr int kMaxTopLogprobs = 20;     // top_logprobs, logprobs
inline constexpr size_t kMaxStopStrings = 16;  // stop

// ordered: the same body parsed keeping key order (a JSON schema's
// properties come out in the order written), or null.
ApiRequest parse_chat_request(const nlohmann::json& body,
                              const nlohmann::ordered_json* ordered = nullptr);
ApiRequest parse_completion_request(const nlohmann::json& body,
                                    const nlohmann::ordered_json* ordered = nullptr);
// Parses text first: malformed JSON or a body that is not an object is 400.
ApiRequest parse_request(Endpoint endpoint, const std::string& text);

}  // namespace parallm::serve
