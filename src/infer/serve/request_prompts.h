// The token ids a request asks to continue, and how many tokens each may
// get: chat messages go through the model's chat template, completions'
// text through the tokenizer (ids pass as given). Refuses with ApiError
// 400 a prompt that is empty, holds ids outside the vocabulary, or with
// max_tokens does not fit in the context (the message names the numbers,
// as vLLM's does); a chat template that raises is a 400 too. Without
// max_tokens a chat completion may fill the context.
#pragma once
#include <cstdint>
#include <vector>

#include "infer/serve/api_request.h"
#include "infer/serve/served_model.h"

namespace parallm::serve {

struct PromptPlan {
  std::vector<int32_t> ids;
  int64_t max_new_tokens = 0;
};

std::vector<PromptPlan> plan_prompts(const ApiRequest& req, const ServedModel& model);

}  // namespace parallm::serve
