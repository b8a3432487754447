// ChoiceText (see choice_text.h). Decoding all ids again at each update
// keeps byte-level merges exact (a token's text may depend on its
// neighbours); answers are short enough for this to cost little.
#include "infer/serve/choice_text.h"

#include <algorithm>

#include "data/tokenizer/utf8.h"

namespace parallm::serve {

ChoiceText::ChoiceText(const Tokenizer& tokenizer, std::vector<std::string> stop_strings)
    : tok_(tokenizer), stops_(std::move(stop_strings)) {}

void ChoiceText::add(const SequenceUpdate& u) {
  prompt_tokens_ = u.prompt_tokens;
  cached_prompt_tokens_ = std::max(cached_prompt_tokens_, u.cached_prompt_tokens);
  for (const SampledToken& t : u.tokens) {
    tokens_.push_back(t);
    ids_.push_back(t.token);
  }
  if (!u.finished) return;
  finished_ = true;
  finish_ = u.finish;
  text_end_ = u.text_end;
  if (finish_ == FinishReason::Eos && !ids_.empty()) ids_.pop_back();
}

std::string ChoiceText::bytes() const { return tok_.decode_bytes(ids_, true); }

size_t ChoiceText::text_bytes(const std::string& all) const {
  if (!finished_) {
    size_t end = utf8_complete_prefix(all);
    if (!stops_.empty()) end = std::min(end, stops_.scan(all).end);
    return end;
  }
  return finish_ == FinishReason::Stop ? std::min(text_end_, all.size()) : all.size();
}

std::string ChoiceText::take_delta() {
  const std::string all = bytes();
  const size_t end = text_bytes(all);
  if (end <= taken_) return "";
  std::string d = utf8_lossy(std::string_view(all).substr(taken_, end - taken_));
  taken_ = end;
  return d;
}

std::string ChoiceText::final_text() const {
  const std::string all = bytes();
  return utf8_lossy(std::string_view(all).substr(0, text_bytes(all)));
}

namespace {
int64_t code_points(std::string_view s) {
  int64_t n = 0;
  for (size_t pos = 0; pos < s.size(); ++n) next_code_point(s, pos);
  return n;
}
}  // namespace

int64_t ChoiceText::text_offset(size_t i) const {
  // The text before token i: the whole characters of its decoded prefix.
  const size_t n = std::min(i, ids_.size());
  const std::string prefix = tok_.decode_bytes(std::span<const int32_t>(ids_).first(n), true);
  const int64_t at = code_points(std::string_view(prefix).substr(0, utf8_complete_prefix(prefix)));
  return finished_ ? std::min(at, code_points(final_text())) : at;
}

}  // namespace parallm::serve
