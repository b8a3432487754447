// ServedModel: what the HTTP layer knows of the model it serves: the name
// clients ask for, its context length and vocabulary, and the tokenizer and
// chat template that turn requests into token ids and ids into text. The
// model itself stays behind the Engine.
#pragma once
#include <cstdint>
#include <string>

#include "data/tokenizer/tokenizer.h"
#include "infer/chat/chat_template.h"

namespace parallm::serve {

struct ServedModel {
  std::string name;
  int64_t context = 0;     // positions: prompt + completion tokens
  int64_t vocab_size = 0;  // the model's rows (ids a prompt may hold)
  const Tokenizer* tokenizer = nullptr;
  const ChatTemplate* chat_template = nullptr;
  int64_t created = 0;  // unix seconds, for /v1/models
};

}  // namespace parallm::serve
