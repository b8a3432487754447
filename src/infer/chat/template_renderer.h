// Renderer: walks a parsed chat template (template_ast) over a set of global
// variables and returns the text, with Jinja2's scoping: `set` inside a for
// loop is local to that iteration (each iteration starts again from the outer
// values), `set` inside an if is not scoped, a namespace() is shared.
// Invariant: render errors name the value and line ("'u' is undefined",
// "unsupported operand types for +: 'str' and 'int' at line 2"); a template's
// raise_exception(msg) throws TemplateRaised whose message() is exactly msg.
#pragma once
#include <string>

#include "base/error.h"
#include "infer/chat/template_ast.h"

namespace parallm::chat {

class TemplateRaised : public Error {
 public:
  explicit TemplateRaised(std::string message)
      : Error("chat template: raise_exception: " + message), message_(std::move(message)) {}
  const std::string& message() const { return message_; }

 private:
  std::string message_;
};

// globals: the variables the template sees (messages, add_generation_prompt,
// bos_token, ...), in the order given.
std::string render_template(const Body& body, const Dict& globals);

}  // namespace parallm::chat
