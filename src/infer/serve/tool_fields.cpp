// parse_tool_fields and parse_message_tool_calls (see tool_fields.h).
// Function names follow OpenAI's rule: 1-64 of a-z, A-Z, 0-9, '_' and '-'.
#include "infer/serve/tool_fields.h"

#include <fmt/core.h>

#include "base/error.h"
#include "infer/serve/api_error.h"
#include "infer/structured/json_schema_grammar.h"

namespace parallm::serve {

namespace {

using OJson = nlohmann::ordered_json;

bool valid_function_name(const std::string& s) {
  if (s.empty() || s.size() > 64) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') return false;
  return true;
}

// The `function` object of a tool or a tool_choice, checked as an object.
RequestFields function_fields(const RequestFields& t) {
  const nlohmann::json* fn = t.find("function");
  if (!fn) t.fail("function", "is required");
  if (!fn->is_object()) t.fail("function", "expected an object, got " + json_type_name(*fn));
  return RequestFields(*fn, t.path("function."));
}

void check_function_type(const RequestFields& t) {
  const std::optional<std::string> type = t.string("type");
  if (!type) t.fail("type", "is required ('function')");
  if (*type != "function")
    t.fail("type", "only 'function' tools are supported, got '" + *type + "'");
}

ToolSpec parse_tool(const RequestFields& f, size_t i, const nlohmann::json& tool,
                    const OJson& ordered) {
  const std::string where = fmt::format("tools[{}]", i);
  if (!tool.is_object()) f.fail(where, "expected an object, got " + json_type_name(tool));
  const RequestFields t(tool, where + ".");
  check_function_type(t);
  const RequestFields fn = function_fields(t);
  ToolSpec spec;
  const std::optional<std::string> name = fn.string("name");
  if (!name) fn.fail("name", "is required");
  if (!valid_function_name(*name))
    fn.fail("name", "must be 1 to 64 of a-z, A-Z, 0-9, '_' and '-', got '" + *name + "'");
  spec.name = *name;
  fn.string("description");  // its type is checked
  const nlohmann::json* params = fn.find("parameters");
  if (params && !params->is_object())
    fn.fail("parameters", "expected a JSON schema object, got " + json_type_name(*params));
  spec.parameters = params ? ordered["function"]["parameters"] : OJson{{"type", "object"}};
  try {
    structured::json_schema_grammar(spec.parameters);
  } catch (const Error& e) {
    fn.fail("parameters", fmt::format("is not a supported JSON schema: {}", e.what()));
  }
  return spec;
}

void parse_tool_choice(const RequestFields& f, ToolRequest& r) {
  const nlohmann::json* c = f.find("tool_choice");
  r.choice = r.tools.empty() ? ToolChoice::None : ToolChoice::Auto;
  if (!c) return;
  if (c->is_string()) {
    const std::string s = c->get<std::string>();
    if (s == "none")
      r.choice = ToolChoice::None;
    else if (s == "auto")
      r.choice = r.tools.empty() ? ToolChoice::None : ToolChoice::Auto;
    else if (s == "required")
      r.choice = ToolChoice::Required;
    else
      f.fail("tool_choice", "must be 'none', 'auto', 'required' or an object, got '" + s + "'");
  } else if (c->is_object()) {
    const RequestFields t(*c, "tool_choice.");
    check_function_type(t);
    const std::optional<std::string> name = function_fields(t).string("name");
    if (!name) t.fail("function.name", "is required");
    r.choice = ToolChoice::Named;
    r.forced = *name;
    bool known = false;
    for (const ToolSpec& s : r.tools) known = known || s.name == *name;
    if (!known) t.fail("function.name", "names no function in tools: '" + *name + "'");
  } else {
    f.fail("tool_choice", "expected a string or an object, got " + json_type_name(*c));
  }
  if (r.choice == ToolChoice::Required && r.tools.empty())
    f.fail("tool_choice", "is 'required' but the request has no tools");
}

}  // namespace

ToolRequest parse_tool_fields(const RequestFields& f, const nlohmann::ordered_json* ordered_tools) {
  ToolRequest r;
  if (const nlohmann::json* tools = f.find("tools")) {
    if (!tools->is_array()) f.fail("tools", "expected an array, got " + json_type_name(*tools));
    const OJson ordered = ordered_tools ? *ordered_tools : OJson(*tools);
    for (size_t i = 0; i < tools->size(); ++i)
      r.tools.push_back(parse_tool(f, i, (*tools)[i], ordered[i]));
    for (size_t i = 0; i < r.tools.size(); ++i)
      for (size_t j = 0; j < i; ++j)
        if (r.tools[i].name == r.tools[j].name)
          f.fail(fmt::format("tools[{}].function.name", i),
                 "repeats the name of tools[" + std::to_string(j) + "]: '" + r.tools[i].name + "'");
    if (!r.tools.empty()) r.tools_json = ordered.dump();
  }
  parse_tool_choice(f, r);
  r.parallel = f.boolean("parallel_tool_calls").value_or(true);
  return r;
}

std::vector<ChatToolCall> parse_message_tool_calls(const RequestFields& m) {
  std::vector<ChatToolCall> out;
  const nlohmann::json* calls = m.find("tool_calls");
  if (!calls) return out;
  if (!calls->is_array()) m.fail("tool_calls", "expected an array, got " + json_type_name(*calls));
  for (size_t i = 0; i < calls->size(); ++i) {
    const std::string where = fmt::format("tool_calls[{}]", i);
    const nlohmann::json& call = (*calls)[i];
    if (!call.is_object()) m.fail(where, "expected an object, got " + json_type_name(call));
    const RequestFields c(call, m.path(where) + ".");
    if (c.find("type")) check_function_type(c);
    const RequestFields fn = function_fields(c);
    ChatToolCall tc;
    tc.id = c.string("id").value_or("");
    const std::optional<std::string> name = fn.string("name");
    if (!name) fn.fail("name", "is required");
    tc.name = *name;
    const nlohmann::json* args = fn.find("arguments");
    if (!args) fn.fail("arguments", "is required (a JSON string)");
    if (args->is_string()) {
      tc.arguments = args->get<std::string>();
      if (nlohmann::json::parse(tc.arguments, nullptr, false).is_discarded())
        fn.fail("arguments", "is a string that is not valid JSON");
    } else if (args->is_object()) {
      tc.arguments = args->dump();  // some clients send the object itself
    } else {
      fn.fail("arguments", "expected a JSON string, got " + json_type_name(*args));
    }
    out.push_back(std::move(tc));
  }
  return out;
}

}  // namespace parallm::serve
