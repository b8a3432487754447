// ToolStreamHold: what of a streamed chat choice's text may go out as
// delta.content at once while tools are offered. Text that may be a tool call
// is held to the end, where tool_call_output() reads it: for Hermes, from
// `<tool_call>` on (a tail that could still grow into it waits); for the
// other formats, the whole text when it starts with `{`, `[`, `[TOOL_CALLS]`
// or `<|python_tag|>`; with tool_choice required or named, everything.
// Invariant: the content sent, then the held text, spell the choice's text.
#pragma once
#include <string>

#include "infer/serve/tool_fields.h"

namespace parallm::serve {

class ToolStreamHold {
 public:
  ToolStreamHold(ToolFormat format, bool constrained)
      : format_(format), holding_(constrained), decided_(constrained) {}

  // Adds the next safe text; returns the part that may be sent now.
  std::string feed(const std::string& delta);
  // At the end: the text neither sent nor held (a tail that did not become a marker).
  std::string flush();
  const std::string& held() const { return held_; }

 private:
  std::string feed_hermes();
  ToolFormat format_;
  bool holding_, decided_;
  std::string pending_;  // not yet sent, not yet held
  std::string held_;
};

}  // namespace parallm::serve
