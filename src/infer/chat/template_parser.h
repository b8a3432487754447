// Parser of the chat-template Jinja subset: tokens (template_lexer) to a Body
// of statements (template_ast), with Jinja2's operator precedence (filters
// bind tighter than `+`, so `'a' + x | trim` trims only x).
// Invariant: anything outside the subset (a tag, filter, test, function or
// method we do not implement, a malformed expression) throws parallm::Error
// naming the construct and its line; nothing is skipped silently.
#pragma once
#include <string_view>

#include "infer/chat/template_ast.h"

namespace parallm::chat {

Body parse_template(std::string_view source);

}  // namespace parallm::chat
