// Python's operators on chat-template values, as Jinja2 evaluates them:
// `+` adds numbers (bool counts as int) and joins strings or lists, `/` is true
// division, `//` and `%` floor, `~` joins str(); comparisons chain; slices
// follow slice.indices().
// Invariant: an operation Python would refuse (str + int, '%s' % x, < between
// a str and an int, anything on an undefined value) throws, naming the types
// and the line; nothing is coerced silently.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "infer/chat/template_value.h"

namespace parallm::chat {

// op: + - * / // % ** ~
Value binary_op(const std::string& op, const Value& a, const Value& b, int line);
// op: == != < > <= >= in notin
bool compare_op(const std::string& op, const Value& a, const Value& b, int line);
// The positions xs[start:stop:step] visits in a sequence of length len; a null
// bound is omitted.
std::vector<int64_t> slice_positions(int64_t len, const Value* start, const Value* stop,
                                     const Value* step, int line);

}  // namespace parallm::chat
