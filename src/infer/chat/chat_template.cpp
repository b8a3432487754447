// ChatTemplate: tokenizer_config.json to a rendered prompt (see chat_template.h).
// The config is read the way transformers reads it: special tokens may be
// strings or AddedToken objects, and a list of named templates yields "default".
#include "infer/chat/chat_template.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "base/error.h"
#include "infer/chat/template_json.h"
#include "infer/chat/template_parser.h"
#include "infer/chat/template_renderer.h"

namespace parallm {
namespace {

using nlohmann::json;

// A special token is a string or an AddedToken object {"content": ...}.
std::string token_text(const json& v, const std::string& key, const std::string& origin) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string())
    return v["content"].get<std::string>();
  PX_CHECK(v.is_null(), "chat template: {}: '{}' is neither a string nor a token object: {}",
           origin, key, v.dump());
  return "";
}

SpecialTokens special_tokens_of(const json& config, const std::string& origin) {
  SpecialTokens out;
  for (const char* key : {"bos_token", "eos_token", "unk_token", "sep_token", "pad_token",
                          "cls_token", "mask_token"}) {
    if (!config.contains(key)) continue;
    std::string text = token_text(config[key], key, origin);
    if (!text.empty()) out.tokens.emplace_back(key, std::move(text));
  }
  if (config.contains("additional_special_tokens") &&
      config["additional_special_tokens"].is_array())
    for (const json& t : config["additional_special_tokens"])
      out.additional.push_back(token_text(t, "additional_special_tokens", origin));
  return out;
}

// The template source, or nullopt when the config has none. A list of named
// templates picks "default", as transformers does without tools.
std::optional<std::string> template_of(const json& config, const std::string& origin) {
  if (!config.contains("chat_template") || config["chat_template"].is_null()) return std::nullopt;
  const json& t = config["chat_template"];
  if (t.is_string()) return t.get<std::string>();
  PX_CHECK(t.is_array(), "chat template: {}: chat_template must be a string or a list, got {}",
           origin, t.type_name());
  std::vector<std::string> names;
  for (const json& entry : t) {
    PX_CHECK(entry.is_object() && entry.contains("name") && entry.contains("template"),
             "chat template: {}: each chat_template entry needs 'name' and 'template': {}", origin,
             entry.dump());
    names.push_back(entry["name"].get<std::string>());
    if (names.back() == "default") return entry["template"].get<std::string>();
  }
  PX_FAIL("chat template: {}: no template named 'default' among {}", origin, names);
}

json parse_config(std::string_view text, const std::string& origin) {
  try {
    json config = json::parse(text);
    PX_CHECK(config.is_object(), "chat template: {} is not a JSON object", origin);
    return config;
  } catch (const json::exception& e) {
    PX_FAIL("chat template: {} is not valid JSON: {}", origin, e.what());
  }
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  PX_CHECK(in.good(), "chat template: cannot read tokenizer config '{}'", path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

ChatTemplate load(std::string_view text, const std::string& origin, bool allow_plain) {
  const json config = parse_config(text, origin);
  SpecialTokens tokens = special_tokens_of(config, origin);
  std::optional<std::string> source = template_of(config, origin);
  if (source) return ChatTemplate(std::move(*source), std::move(tokens));
  PX_CHECK(allow_plain,
           "chat template: {} has no 'chat_template' (a base model such as GPT-2?); "
           "ChatTemplate::plain() joins the contents with newlines instead",
           origin);
  return ChatTemplate::plain(std::move(tokens));
}

}  // namespace

std::string SpecialTokens::get(std::string_view name) const {
  for (const auto& [k, v] : tokens)
    if (k == name) return v;
  return "";
}

ChatTemplate::ChatTemplate(std::string source, SpecialTokens special_tokens)
    : source_(std::move(source)),
      special_tokens_(std::move(special_tokens)),
      body_(std::make_shared<const chat::Body>(chat::parse_template(source_))) {}

ChatTemplate ChatTemplate::from_config_file(const std::string& path) {
  return load(read_file(path), path, false);
}

ChatTemplate ChatTemplate::from_config_text(std::string_view json_text, const std::string& origin) {
  return load(json_text, origin, false);
}

ChatTemplate ChatTemplate::from_config_file_or_plain(const std::string& path) {
  return load(read_file(path), path, true);
}

ChatTemplate ChatTemplate::plain(SpecialTokens special_tokens) {
  return ChatTemplate(std::string(kPlainSource), std::move(special_tokens));
}

namespace {
// A message as the template sees it: role, content, then tool_calls
// ({id, type, function: {name, arguments}}) or tool_call_id when set.
chat::Value message_value(const ChatMessage& m) {
  using chat::Value;
  chat::Dict d = {{"role", Value::string(m.role)}, {"content", Value::string(m.content)}};
  if (!m.tool_calls.empty()) {
    chat::List calls;
    for (const ChatToolCall& c : m.tool_calls) {
      const json args = json::parse(c.arguments, nullptr, false);
      Value a =
          args.is_object() ? chat::value_from_json_text(c.arguments) : Value::string(c.arguments);
      calls.push_back(Value::dict(
          {{"id", Value::string(c.id)},
           {"type", Value::string("function")},
           {"function", Value::dict({{"name", Value::string(c.name)}, {"arguments", a}})}}));
    }
    d.emplace_back("tool_calls", Value::list(std::move(calls)));
  }
  if (!m.tool_call_id.empty()) d.emplace_back("tool_call_id", Value::string(m.tool_call_id));
  return Value::dict(std::move(d));
}
}  // namespace

ChatPrompt ChatTemplate::render(const std::vector<ChatMessage>& messages,
                                bool add_generation_prompt, std::string_view tools_json) const {
  // transformers fails on an empty conversation too (it reads conversation[0]).
  PX_CHECK(!messages.empty(), "chat template: the conversation is empty (no messages to render)");
  using chat::Value;
  chat::List list;
  for (const ChatMessage& m : messages) list.push_back(message_value(m));
  chat::Dict globals = {
      {"messages", Value::list(std::move(list))},
      {"tools", tools_json.empty() ? Value::none() : chat::value_from_json_text(tools_json)},
      {"documents", Value::none()},
      {"add_generation_prompt", Value::boolean(add_generation_prompt)}};
  for (const auto& [k, v] : special_tokens_.tokens) globals.emplace_back(k, Value::string(v));
  if (!special_tokens_.additional.empty()) {
    chat::List extra;
    for (const std::string& t : special_tokens_.additional) extra.push_back(Value::string(t));
    globals.emplace_back("additional_special_tokens", Value::list(std::move(extra)));
  }
  ChatPrompt prompt;
  prompt.text = chat::render_template(*body_, globals);
  const std::string bos = special_tokens_.get("bos_token");
  prompt.starts_with_bos = !bos.empty() && prompt.text.compare(0, bos.size(), bos) == 0;
  return prompt;
}

}  // namespace parallm
