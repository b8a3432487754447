// ChatTemplate: a model's chat format, read from the `chat_template` of its
// tokenizer_config.json (a Jinja2 template, run by our interpreter of the
// subset chat templates use, docs/chat_templates.md) and rendered over a
// conversation exactly as transformers' apply_chat_template(tokenize=False).
// Invariant: render() sees the variables transformers passes (messages,
// tools (None without tools), documents=None, add_generation_prompt, and each
// non-empty special token of the config); a ChatPrompt that starts_with_bos
// must be tokenized without adding another BOS.
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "infer/chat/template_ast.h"

namespace parallm {

// One call an assistant turn made; arguments is JSON text (OpenAI's shape).
struct ChatToolCall {
  std::string id;
  std::string name;
  std::string arguments;
};

struct ChatMessage {
  std::string role;  // "system", "user", "assistant", "tool", ...
  std::string content;
  std::vector<ChatToolCall> tool_calls;  // assistant
  std::string tool_call_id;              // tool: the call it answers ("" when not given)
};

// The rendered prompt. When starts_with_bos is true the template already put
// the BOS token first (Llama-2/3, Mistral): tokenize with add_special_tokens
// off, or the model sees BOS twice (a shift it was never trained on).
struct ChatPrompt {
  std::string text;
  bool starts_with_bos = false;
};

// transformers' special_tokens_map: (name, value) in its attribute order
// (bos_token, eos_token, unk_token, sep_token, pad_token, cls_token,
// mask_token, additional_special_tokens), only those set and non-empty.
struct SpecialTokens {
  std::vector<std::pair<std::string, std::string>> tokens;
  std::vector<std::string> additional;
  std::string get(std::string_view name) const;  // "" when unset
};

class ChatTemplate {
 public:
  // What parallm uses for a model without a template (GPT-2, base models):
  // the contents joined by "\n", no role markers, no BOS, nothing added for
  // add_generation_prompt. Jinja source, so the reference test checks it too.
  static constexpr std::string_view kPlainSource =
      "{% for message in messages %}{{ message['content'] }}"
      "{% if not loop.last %}{{ '\\n' }}{% endif %}{% endfor %}";

  // Parses source now: an unsupported construct throws here, not at render.
  ChatTemplate(std::string source, SpecialTokens special_tokens);

  // From a tokenizer_config.json; throws when it has no chat_template.
  static ChatTemplate from_config_file(const std::string& path);
  // Same, from the file's text; origin names it in errors.
  static ChatTemplate from_config_text(std::string_view json_text, const std::string& origin);
  // As from_config_file, but a config without chat_template gives plain().
  static ChatTemplate from_config_file_or_plain(const std::string& path);
  static ChatTemplate plain(SpecialTokens special_tokens = {});

  // Throws chat::TemplateRaised when the template calls raise_exception (bad
  // role order, an unsupported role), parallm::Error on other failures.
  // tools_json: the JSON text of the request's tool list (each
  // {"type": "function", "function": {...}}, key order kept), or "" for
  // tools=None. A tool call's arguments reach the template as a dict when
  // they are a JSON object (as vLLM passes them), else as the text.
  ChatPrompt render(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                    std::string_view tools_json = {}) const;

  const std::string& source() const { return source_; }
  const SpecialTokens& special_tokens() const { return special_tokens_; }

 private:
  std::string source_;
  SpecialTokens special_tokens_;
  std::shared_ptr<const chat::Body> body_;
};

}  // namespace parallm
