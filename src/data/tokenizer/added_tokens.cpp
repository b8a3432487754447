// AddedVocabulary: a first-byte index stands in for Hugging Face's
// Aho-Corasick automaton; at each position the longest candidate wins and the
// search resumes after the match, also after a match single_word rejects.
#include "data/tokenizer/added_tokens.h"

#include <algorithm>

#include "data/tokenizer/utf8.h"

namespace parallm {

namespace {

// Rust's char::is_whitespace (the Unicode White_Space property).
bool is_white_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
         c == 0x3000;
}

size_t char_start_before(std::string_view s, size_t pos) {
  size_t p = pos - 1;
  while (p > 0 && (static_cast<unsigned char>(s[p]) & 0xC0) == 0x80) --p;
  return p;
}

}  // namespace

AddedVocabulary::AddedVocabulary(std::vector<AddedToken> tokens) : tokens_(std::move(tokens)) {
  raw_index_.resize(256);
  normalized_index_.resize(256);
  bool any_single_word = false;
  for (size_t i = 0; i < tokens_.size(); ++i) {
    const AddedToken& t = tokens_[i];
    by_id_[t.id] = i;
    any_single_word = any_single_word || t.single_word;
    if (t.content.empty()) continue;
    Index& index = t.normalized ? normalized_index_ : raw_index_;
    index[static_cast<unsigned char>(t.content[0])].push_back(i);
  }
  for (Index* index : {&raw_index_, &normalized_index_}) {
    for (auto& list : *index) {
      std::stable_sort(list.begin(), list.end(), [&](size_t a, size_t b) {
        return tokens_[a].content.size() > tokens_[b].content.size();
      });
    }
  }
  if (any_single_word) word_char_.emplace(R"([\p{Alphabetic}\p{N}])", "single_word matcher");
}

AddedVocabulary AddedVocabulary::from_json(const Json& list, const std::string& where) {
  if (list.is_null()) return AddedVocabulary(std::vector<AddedToken>{});
  PX_CHECK(list.is_array(), "{}: expected an array, got {}", where, json_brief(list));
  std::vector<AddedToken> tokens;
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string w = fmt::format("{}[{}]", where, i);
    AddedToken t;
    const int64_t id = json_int(list[i], "id", w);
    PX_CHECK(id >= 0 && id <= INT32_MAX, "{}.id: out of range: {}", w, id);
    t.id = static_cast<int32_t>(id);
    t.content = json_string(list[i], "content", w);
    PX_CHECK(!t.content.empty(), "{}.content: an added token must not be empty", w);
    t.single_word = json_bool(list[i], "single_word", w, false);
    t.lstrip = json_bool(list[i], "lstrip", w, false);
    t.rstrip = json_bool(list[i], "rstrip", w, false);
    t.special = json_bool(list[i], "special", w, false);
    t.normalized = json_bool(list[i], "normalized", w, !t.special);
    tokens.push_back(std::move(t));
  }
  return AddedVocabulary(std::move(tokens));
}

bool AddedVocabulary::is_word_char_before(std::string_view text, size_t pos) const {
  if (pos == 0) return false;
  const size_t b = char_start_before(text, pos);
  return !word_char_->find_all(text.substr(b, pos - b)).empty();
}

bool AddedVocabulary::is_word_char_at(std::string_view text, size_t pos) const {
  if (pos >= text.size()) return false;
  size_t e = pos;
  next_code_point(text, e);
  return !word_char_->find_all(text.substr(pos, e - pos)).empty();
}

std::vector<TextPiece> AddedVocabulary::split(std::string_view text, bool normalized) const {
  const Index& index = normalized ? normalized_index_ : raw_index_;
  std::vector<TextPiece> pieces;
  size_t done = 0;  // text before this is already in pieces
  size_t pos = 0;
  while (pos < text.size()) {
    const AddedToken* hit = nullptr;
    for (size_t i : index[static_cast<unsigned char>(text[pos])]) {
      if (text.substr(pos).starts_with(tokens_[i].content)) {
        hit = &tokens_[i];
        break;
      }
    }
    if (hit == nullptr) {
      ++pos;
      continue;
    }
    size_t start = pos;
    size_t stop = pos + hit->content.size();
    pos = stop;
    if (hit->single_word && (is_word_char_before(text, start) || is_word_char_at(text, stop))) {
      continue;
    }
    if (hit->lstrip) {
      size_t s = start;
      while (s > done) {
        const size_t b = char_start_before(text, s);
        size_t e = b;
        if (!is_white_space(next_code_point(text, e))) break;
        s = b;
      }
      start = s;
    }
    if (hit->rstrip) {
      while (stop < text.size()) {
        size_t e = stop;
        if (!is_white_space(next_code_point(text, e))) break;
        stop = e;
      }
      pos = stop;
    }
    if (done < start) pieces.push_back({done, start, -1});
    pieces.push_back({start, stop, hit->id});
    done = stop;
  }
  if (done < text.size()) pieces.push_back({done, text.size(), -1});
  return pieces;
}

const AddedToken* AddedVocabulary::find(int32_t id) const {
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : &tokens_[it->second];
}

const AddedToken* AddedVocabulary::find(std::string_view content) const {
  for (const AddedToken& t : tokens_) {
    if (t.content == content) return &t;
  }
  return nullptr;
}

}  // namespace parallm
