// ToolStreamHold: content streams at once until text may be a tool call;
// a partial marker waits; sent + held always spell the whole text.
#include <gtest/gtest.h>

#include "infer/serve/tool_stream_hold.h"

namespace parallm::serve {
namespace {

TEST(ToolStreamHold, HermesHoldsFromTheMarker) {
  ToolStreamHold h(ToolFormat::Hermes, false);
  EXPECT_EQ(h.feed("Let me look. <tool"), "Let me look. ");  // "<tool" may grow into it
  EXPECT_EQ(h.feed("_call>\n{\"name\""), "");
  EXPECT_EQ(h.feed("}"), "");
  EXPECT_EQ(h.held(), "<tool_call>\n{\"name\"}");
  EXPECT_EQ(h.flush(), "");
  ToolStreamHold plain(ToolFormat::Hermes, false);
  EXPECT_EQ(plain.feed("a <b"), "a <b");
  EXPECT_EQ(plain.feed("c <to"), "c ");
  EXPECT_EQ(plain.feed("ol"), "");
  EXPECT_EQ(plain.feed("s"), "<tools");
  EXPECT_EQ(plain.feed(" <"), " ");
  EXPECT_EQ(plain.flush(), "<");  // the tail that never became a marker
  EXPECT_EQ(plain.held(), "");
}

TEST(ToolStreamHold, OtherFormatsDecideOnTheFirstCharacter) {
  ToolStreamHold json(ToolFormat::Json, false);
  EXPECT_EQ(json.feed("  "), "");
  EXPECT_EQ(json.feed("{\"name\": 1}"), "");
  EXPECT_EQ(json.held(), "  {\"name\": 1}");
  ToolStreamHold text(ToolFormat::Llama3, false);
  EXPECT_EQ(text.feed("<|py"), "");  // may be <|python_tag|>
  EXPECT_EQ(text.feed("thon_tag|>{}"), "");
  EXPECT_EQ(text.held(), "<|python_tag|>{}");
  ToolStreamHold words(ToolFormat::Mistral, false);
  EXPECT_EQ(words.feed("Hello"), "Hello");
  EXPECT_EQ(words.feed(" {x}"), " {x}");
  ToolStreamHold forced(ToolFormat::Json, true);
  EXPECT_EQ(forced.feed("Hello"), "");
  EXPECT_EQ(forced.held(), "Hello");
}

}  // namespace
}  // namespace parallm::serve
