// JSON text -> chat::Value, for what a request hands a chat template as data
// (the tool list, a tool call's arguments). Invariant: object keys keep the
// order written, as Python's json.loads keeps them, so `tojson` in a template
// prints them as transformers would; integers stay integers, other numbers
// become floats, as in Python.
#pragma once
#include <string_view>

#include "infer/chat/template_value.h"

namespace parallm::chat {

// Throws parallm::Error naming the problem when text is not valid JSON.
Value value_from_json_text(std::string_view text);

}  // namespace parallm::chat
