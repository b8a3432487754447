// plan_prompts (see request_prompts.h).
#include "infer/serve/request_prompts.h"

#include <fmt/core.h>

#include <algorithm>
#include <cstdint>

#include "base/error.h"
#include "infer/model_text.h"
#include "infer/serve/api_error.h"

namespace parallm::serve {

namespace {

std::vector<int32_t> chat_ids(const ApiRequest& req, const ServedModel& m) {
  try {
    return encode_chat(*m.tokenizer, *m.chat_template, req.messages, req.tools.tools_json);
  } catch (const std::exception& e) {  // the template refused the conversation
    throw ApiError(400, fmt::format("the chat template refused the messages: {}", e.what()),
                   "messages");
  }
}

PromptPlan fit(std::vector<int32_t> ids, const ApiRequest& req, const ServedModel& m,
               const char* param, const char* what) {
  const int64_t n = static_cast<int64_t>(ids.size());
  if (n == 0) throw ApiError(400, fmt::format("the {} is empty (0 tokens)", what), param);
  for (int32_t id : ids)
    if (id < 0 || id >= m.vocab_size)
      throw ApiError(
          400, fmt::format("token id {} is outside the vocabulary (0..{})", id, m.vocab_size - 1),
          param);
  const int64_t max_new = req.max_tokens.value_or(m.context - n);
  if (max_new < 1 || max_new > m.context - n) {
    const int64_t asked = std::max<int64_t>(max_new, 1);  // a full prompt leaves room for none
    const int64_t total = asked > INT64_MAX - n ? INT64_MAX : n + asked;
    throw ApiError(400,
                   fmt::format("This model's maximum context length is {} tokens. However, you "
                               "requested {} tokens ({} in the {}, {} in the completion). "
                               "Please reduce the length of the {} or completion.",
                               m.context, total, n, what, asked, what),
                   param, "invalid_request_error", "context_length_exceeded");
  }
  return {std::move(ids), max_new};
}

}  // namespace

std::vector<PromptPlan> plan_prompts(const ApiRequest& req, const ServedModel& m) {
  std::vector<PromptPlan> out;
  if (req.endpoint == Endpoint::Chat) {
    out.push_back(fit(chat_ids(req, m), req, m, "messages", "messages"));
    return out;
  }
  for (const PromptInput& p : req.prompts)
    out.push_back(
        fit(p.is_ids ? p.ids : m.tokenizer->encode(p.text, true), req, m, "prompt", "prompt"));
  return out;
}

}  // namespace parallm::serve
