// The OpenAI response bodies of a finished request: chat.completion and
// text_completion objects with their choices, logprobs in each endpoint's
// shape, and usage. Streaming chunks (stream_chunks.h) reuse the logprobs
// and usage pieces. Invariant: every string put in a body is valid UTF-8
// (token texts go through utf8_lossy), and every logprob is finite (-inf
// becomes -9999, as OpenAI reports it).
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "data/tokenizer/tokenizer.h"
#include "infer/serve/api_request.h"
#include "infer/serve/choice_text.h"

namespace parallm::serve {

// What every body and chunk of one request shares.
struct ResponseMeta {
  std::string id;  // "chatcmpl-..." or "cmpl-..."
  int64_t created = 0;
  std::string model;
};

struct Usage {
  int64_t prompt_tokens = 0, completion_tokens = 0;
  int64_t cached_prompt_tokens = 0;  // of prompt_tokens, read from the prefix cache
};
// With prompt_tokens_details.cached_tokens when the prefix cache served any.
nlohmann::json usage_json(const Usage& u);

// OpenAI's name for how a choice ended: an EOS or a stop string is "stop".
const char* api_finish_reason(FinishReason r);

// Chat logprobs: {"content": [{token, logprob, bytes, top_logprobs}]} of
// tokens [from, to) of a choice.
nlohmann::json chat_logprobs(const Tokenizer& tok, const std::vector<SampledToken>& tokens,
                             size_t from, size_t to);
// Completions logprobs: {tokens, token_logprobs, top_logprobs, text_offset}.
nlohmann::json completion_logprobs(const Tokenizer& tok, const ChoiceText& choice, size_t from,
                                   size_t to);

nlohmann::json chat_completion_body(const ResponseMeta& meta, const Tokenizer& tok,
                                    const ApiRequest& req, const std::vector<ChoiceText>& choices,
                                    const Usage& usage);
nlohmann::json text_completion_body(const ResponseMeta& meta, const Tokenizer& tok,
                                    const ApiRequest& req, const std::vector<ChoiceText>& choices,
                                    const Usage& usage);

// A body as sent: compact, invalid UTF-8 replaced rather than thrown on.
std::string dump_body(const nlohmann::json& j);

}  // namespace parallm::serve
