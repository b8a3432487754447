// ChoiceText: the text of one choice as its tokens arrive from the engine.
// take_delta() gives the text that is safe to send now: whole UTF-8
// characters only, and never a tail that could still grow into a stop
// string. When the sequence ends, the rest comes out: all of it (an EOS that
// ended it contributes nothing), or the text before the stop string.
// Invariant: the concatenation of every delta equals final_text().
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "data/tokenizer/tokenizer.h"
#include "infer/serve/engine.h"
#include "infer/stop_strings.h"

namespace parallm::serve {

class ChoiceText {
 public:
  // tokenizer must outlive this; its decode_bytes(ids, true) must be the one
  // the engine finds stop strings with (text_end counts its bytes).
  ChoiceText(const Tokenizer& tokenizer, std::vector<std::string> stop_strings);

  void add(const SequenceUpdate& u);
  // Text not yet taken that may be sent now (valid UTF-8; may be empty).
  std::string take_delta();
  // The whole text once finished (valid UTF-8).
  std::string final_text() const;

  bool finished() const { return finished_; }
  FinishReason finish() const { return finish_; }
  const std::vector<SampledToken>& tokens() const { return tokens_; }  // all, EOS included
  int64_t prompt_tokens() const { return prompt_tokens_; }
  int64_t cached_prompt_tokens() const { return cached_prompt_tokens_; }

  // Completions' logprobs.text_offset of token i: where its text starts in
  // the choice's text, in code points (clamped to the end once finished).
  int64_t text_offset(size_t i) const;

 private:
  // The decoded bytes of the tokens that carry text, and how much of them
  // is text: all once ended by an EOS or the length, text_end after a stop.
  std::string bytes() const;
  size_t text_bytes(const std::string& all) const;

  const Tokenizer& tok_;
  StopStrings stops_;
  std::vector<SampledToken> tokens_;
  std::vector<int32_t> ids_;  // tokens_' ids, without an EOS that ended the sequence
  bool finished_ = false;
  FinishReason finish_ = FinishReason::Length;
  size_t text_end_ = 0;
  int64_t prompt_tokens_ = 0;
  int64_t cached_prompt_tokens_ = 0;
  size_t taken_ = 0;  // bytes of bytes() already given out
};

}  // namespace parallm::serve
