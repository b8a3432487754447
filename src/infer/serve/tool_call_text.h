// Tool calls as a model family writes them (ToolFormat, tool_fields.h): which
// format a chat template asks for, the grammar that forces one call (for
// tool_choice "required" or a named function: the function's name a JSON
// const, its arguments its parameters schema), and the calls read back out
// of generated text. Invariant: every text the grammar accepts parses back to
// one call whose arguments the function's schema accepts.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "infer/serve/tool_fields.h"
#include "infer/structured/byte_grammar.h"
#include "infer/structured/grammar.h"

namespace parallm::serve {

// From the template's own instructions: `<tool_call>` -> Hermes,
// `[TOOL_CALLS]` -> Mistral, `<|python_tag|>` or Llama-3 headers with tools
// -> Llama3, else Json.
ToolFormat tool_format_of(std::string_view template_source);

// Calls in `format`, before compilation: one to the named function, or, when
// only == "", 1 to max_calls to any of `tools` (several only where the form
// holds several: Hermes blocks, Mistral's list).
inline constexpr int kMaxForcedCalls = 4;
structured::Grammar tool_call_grammar(ToolFormat format, const std::vector<ToolSpec>& tools,
                                      const std::string& only, int max_calls = kMaxForcedCalls);
// Compiled for the request's choice; throws ApiError 400 naming "tools".
std::shared_ptr<const structured::ByteGrammar> compile_tool_call_grammar(const ToolRequest& r);

struct ParsedToolCall {
  std::string name;
  std::string arguments;  // JSON text of an object
};
struct ToolCallParse {
  std::vector<ParsedToolCall> calls;   // empty: the text holds no valid call
  std::optional<std::string> content;  // the text around the calls; null when none
};
// Calls whose name is one of `tools` and whose arguments are an object; when
// any marked call fails to parse, the text is all content and no call.
ToolCallParse parse_tool_calls(ToolFormat format, const std::string& text,
                               const std::vector<ToolSpec>& tools);

}  // namespace parallm::serve
