// Tool-call formats, their grammar and their parser (see tool_call_text.h).
// The grammar is the JSON-schema compiler's over one synthetic schema (an
// anyOf of {"name": const, args: parameters} objects), wrapped in the
// family's literal markers.
#include "infer/serve/tool_call_text.h"

#include <fmt/core.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "infer/serve/api_error.h"
#include "infer/structured/json_schema_grammar.h"

namespace parallm::serve {

namespace {

using OJson = nlohmann::ordered_json;
namespace st = parallm::structured;

struct Markers {
  std::string prefix, suffix;
  const char* args_key;
  std::string between;     // between two calls; "" when the form holds one call
  bool wrap_each = false;  // prefix and suffix around each call, not around all
};

Markers markers_of(ToolFormat f) {
  switch (f) {
    case ToolFormat::Hermes:
      return {"<tool_call>\n", "\n</tool_call>", "arguments", "\n", true};
    case ToolFormat::Llama3:
      return {"", "", "parameters", "", false};
    case ToolFormat::Mistral:
      return {"[TOOL_CALLS] [", "]", "arguments", ", ", false};
    case ToolFormat::Json:
      break;
  }
  return {"", "", "arguments", "", false};
}

std::string trim(std::string_view s) {
  const size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return "";
  const size_t e = s.find_last_not_of(" \t\r\n");
  return std::string(s.substr(b, e - b + 1));
}

// One call object {"name": ..., args: {...}} (either args key is accepted).
std::optional<ParsedToolCall> call_of(const OJson& j, const std::vector<ToolSpec>& tools) {
  if (!j.is_object() || !j.contains("name") || !j["name"].is_string()) return std::nullopt;
  const OJson* args = nullptr;
  for (const char* key : {"arguments", "parameters"})
    if (j.contains(key)) args = &j[key];
  if (!args || !args->is_object()) return std::nullopt;
  const std::string name = j["name"].get<std::string>();
  for (const ToolSpec& t : tools)
    if (t.name == name) return ParsedToolCall{name, args->dump()};
  return std::nullopt;
}

// Calls from JSON text: one object or an array of them; false on any failure.
bool add_calls(std::string_view text, const std::vector<ToolSpec>& tools,
               std::vector<ParsedToolCall>& out) {
  const OJson j = OJson::parse(text, nullptr, false);
  if (j.is_discarded()) return false;
  const OJson list = j.is_array() ? j : OJson::array({j});
  if (list.empty()) return false;
  for (const OJson& c : list) {
    std::optional<ParsedToolCall> call = call_of(c, tools);
    if (!call) return false;
    out.push_back(std::move(*call));
  }
  return true;
}

std::optional<std::string> content_of(std::string text) {
  text = trim(text);
  return text.empty() ? std::nullopt : std::optional<std::string>(std::move(text));
}

// Hermes: every <tool_call>...</tool_call> block; the rest is content.
ToolCallParse parse_hermes(const std::string& text, const std::vector<ToolSpec>& tools) {
  const std::string open = "<tool_call>", close = "</tool_call>";
  ToolCallParse out;
  std::string rest;
  size_t at = 0;
  while (true) {
    const size_t b = text.find(open, at);
    if (b == std::string::npos) break;
    const size_t e = text.find(close, b + open.size());
    rest += text.substr(at, b - at);
    const std::string_view inner(text.data() + b + open.size(),
                                 (e == std::string::npos ? text.size() : e) - b - open.size());
    if (!add_calls(inner, tools, out.calls)) return {{}, text};
    if (e == std::string::npos) {
      at = text.size();
      break;
    }
    at = e + close.size();
  }
  rest += text.substr(std::min(at, text.size()));
  out.content = content_of(rest);
  return out;
}

}  // namespace

ToolFormat tool_format_of(std::string_view src) {
  if (src.find("<tool_call>") != std::string_view::npos) return ToolFormat::Hermes;
  if (src.find("[TOOL_CALLS]") != std::string_view::npos) return ToolFormat::Mistral;
  if (src.find("<|python_tag|>") != std::string_view::npos ||
      (src.find("<|start_header_id|>") != std::string_view::npos &&
       src.find("tools") != std::string_view::npos))
    return ToolFormat::Llama3;
  return ToolFormat::Json;
}

st::Grammar tool_call_grammar(ToolFormat format, const std::vector<ToolSpec>& tools,
                              const std::string& only, int max_calls) {
  const Markers m = markers_of(format);
  OJson alts = OJson::array();
  for (const ToolSpec& t : tools) {
    if (!only.empty() && t.name != only) continue;
    alts.push_back({{"type", "object"},
                    {"properties", {{"name", {{"const", t.name}}}, {m.args_key, t.parameters}}},
                    {"required", {"name", m.args_key}}});
  }
  PX_CHECK(!alts.empty(), "tool call grammar: no function named '{}' among the tools", only);
  st::Grammar g = st::json_schema_grammar(alts.size() == 1 ? alts[0] : OJson{{"anyOf", alts}});
  const std::string inner = g.root;
  auto wrapped = [&](st::GrammarExpr e) {
    return st::g_seq({st::g_lit(m.prefix), std::move(e), st::g_lit(m.suffix)});
  };
  const st::GrammarExpr one = m.wrap_each ? wrapped(st::g_ref(inner)) : st::g_ref(inner);
  // "required" may make several calls where the form can hold them; a named
  // function is called once.
  const int more = only.empty() && !m.between.empty() ? std::max(max_calls, 1) - 1 : 0;
  st::GrammarExpr calls =
      st::g_seq({one, st::g_repeat(st::g_seq({st::g_lit(m.between), one}), 0, more)});
  g.add("tool_call", m.wrap_each ? std::move(calls) : wrapped(std::move(calls)));
  g.root = "tool_call";
  return g;
}

std::shared_ptr<const st::ByteGrammar> compile_tool_call_grammar(const ToolRequest& r) {
  try {
    return st::compile_grammar(
        tool_call_grammar(r.format, r.tools, r.forced, r.parallel ? kMaxForcedCalls : 1));
  } catch (const Error& e) {
    throw ApiError(400, fmt::format("invalid tools: {}", e.what()), "tools");
  }
}

ToolCallParse parse_tool_calls(ToolFormat format, const std::string& text,
                               const std::vector<ToolSpec>& tools) {
  if (format == ToolFormat::Hermes) return parse_hermes(text, tools);
  ToolCallParse out;
  std::string_view body = text;
  std::string before;
  if (format == ToolFormat::Mistral) {
    const size_t at = text.find("[TOOL_CALLS]");
    if (at != std::string::npos) {
      before = text.substr(0, at);
      body = std::string_view(text).substr(at + 12);
    }
  }
  std::string t = trim(body);
  if (format == ToolFormat::Llama3 && t.rfind("<|python_tag|>", 0) == 0) t = trim(t.substr(14));
  if (t.empty() || (t[0] != '{' && t[0] != '[') || !add_calls(t, tools, out.calls))
    return {{}, text};
  out.content = content_of(before);
  return out;
}

}  // namespace parallm::serve
