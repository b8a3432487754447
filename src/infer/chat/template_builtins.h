// The filters, tests and str/dict methods chat templates may call, with the
// semantics of Jinja2 3.1 under transformers (its own `tojson`), and the
// tables of their names that the parser checks a template against.
// Invariant: a name absent from these tables is refused when the template is
// parsed ("unsupported filter 'xyz' at line 3"), never rendered approximately.
#pragma once
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "infer/chat/template_value.h"

namespace parallm::chat {

using Kwargs = std::vector<std::pair<std::string, Value>>;

bool has_filter(std::string_view name);
bool has_test(std::string_view name);
bool has_method(std::string_view name);
// Global functions: raise_exception, namespace, range (the renderer calls them).
bool has_function(std::string_view name);

Value apply_filter(const std::string& name, const Value& input, const std::vector<Value>& args,
                   const Kwargs& kwargs, int line);
bool apply_test(const std::string& name, const Value& input, const std::vector<Value>& args,
                int line);
Value call_method(const Value& receiver, const std::string& name, const std::vector<Value>& args,
                  const Kwargs& kwargs, int line);

}  // namespace parallm::chat
