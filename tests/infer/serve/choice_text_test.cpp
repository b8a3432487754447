// ChoiceText over the byte tokenizer (one id per byte): deltas hold back a
// character split across tokens and any tail that may start a stop string,
// an EOS adds no text, a stop string cuts the text where the engine found
// it, and the deltas always add up to the final text.
#include <gtest/gtest.h>

#include "infer/serve/choice_text.h"

namespace parallm::serve {
namespace {

SequenceUpdate tokens_of(const std::string& bytes, bool finished = false,
                         FinishReason finish = FinishReason::Length, size_t text_end = 0) {
  SequenceUpdate u;
  for (unsigned char c : bytes) u.tokens.push_back({static_cast<int32_t>(c), -0.5, {}});
  u.finished = finished;
  u.finish = finish;
  u.text_end = text_end;
  u.prompt_tokens = 3;
  return u;
}

class ChoiceTextTest : public ::testing::Test {
 protected:
  std::unique_ptr<Tokenizer> tok = make_byte_tokenizer();
};

TEST_F(ChoiceTextTest, WholeCharactersOnly) {
  ChoiceText c(*tok, {});
  const std::string ni = "\xE4\xBD\xA0";  // U+4F60, three bytes
  c.add(tokens_of(std::string("a").append(ni, 0, 2)));
  EXPECT_EQ(c.take_delta(), "a");
  c.add(tokens_of(ni.substr(2)));
  EXPECT_EQ(c.take_delta(), ni);
  EXPECT_EQ(c.take_delta(), "");
  c.add(tokens_of("b", true));
  EXPECT_EQ(c.take_delta(), "b");
  EXPECT_EQ(c.final_text(), "a" + ni + "b");
  EXPECT_EQ(c.prompt_tokens(), 3);
  EXPECT_EQ(c.tokens().size(), 5u);
}

TEST_F(ChoiceTextTest, HoldsBackWhatMayStartAStopString) {
  ChoiceText c(*tok, {"STOP", "xy"});
  c.add(tokens_of("abST"));
  EXPECT_EQ(c.take_delta(), "ab");  // "ST" may grow into "STOP"
  c.add(tokens_of("Ax"));
  EXPECT_EQ(c.take_delta(), "STA");  // "STA" cannot; "x" may grow into "xy"
  c.add(tokens_of("y", true, FinishReason::Stop, 5));
  EXPECT_EQ(c.take_delta(), "");
  EXPECT_EQ(c.final_text(), "abSTA");
}

TEST_F(ChoiceTextTest, ReleasesTextThatCannotBeAStopString) {
  ChoiceText c(*tok, {"STOP"});
  c.add(tokens_of("abST"));
  EXPECT_EQ(c.take_delta(), "ab");
  c.add(tokens_of("x"));
  EXPECT_EQ(c.take_delta(), "STx");
}

TEST_F(ChoiceTextTest, StopCutsWhereTheEngineFoundIt) {
  ChoiceText c(*tok, {"STOP"});
  c.add(tokens_of("hello ST"));
  std::string streamed = c.take_delta();
  EXPECT_EQ(streamed, "hello ");
  c.add(tokens_of("OP more", true, FinishReason::Stop, 6));
  streamed += c.take_delta();
  EXPECT_EQ(streamed, "hello ");
  EXPECT_EQ(c.final_text(), "hello ");
  EXPECT_TRUE(c.finished());
  EXPECT_EQ(c.finish(), FinishReason::Stop);
  EXPECT_EQ(c.tokens().size(), 15u);  // every generated token still counts
}

TEST_F(ChoiceTextTest, EosAddsNoText) {
  ChoiceText c(*tok, {});
  c.add(tokens_of("hi"));
  SequenceUpdate end;
  end.tokens = {{256, -0.1, {}}};  // the byte tokenizer's end of text
  end.finished = true;
  end.finish = FinishReason::Eos;
  c.add(end);
  EXPECT_EQ(c.take_delta(), "hi");
  EXPECT_EQ(c.final_text(), "hi");
  EXPECT_EQ(c.tokens().size(), 3u);
  EXPECT_EQ(c.finish(), FinishReason::Eos);
}

TEST_F(ChoiceTextTest, AnUnfinishedCharacterAtTheEndBecomesAReplacement) {
  ChoiceText c(*tok, {});
  c.add(tokens_of("a\xE4\xBD"));
  EXPECT_EQ(c.take_delta(), "a");
  c.add(tokens_of("", true));
  EXPECT_EQ(c.take_delta(), "\xEF\xBF\xBD");
  EXPECT_EQ(c.final_text(), "a\xEF\xBF\xBD");
}

TEST_F(ChoiceTextTest, TextOffsetsCountCodePoints) {
  ChoiceText c(*tok, {});
  c.add(tokens_of("a\xC3\xA9z", true));  // a, e-acute (2 bytes), z
  EXPECT_EQ(c.text_offset(0), 0);
  EXPECT_EQ(c.text_offset(1), 1);
  EXPECT_EQ(c.text_offset(2), 1);  // inside the character: where it starts
  EXPECT_EQ(c.text_offset(3), 2);
}

}  // namespace
}  // namespace parallm::serve
