// Regex: an Oniguruma pattern (UTF-8, ONIG_SYNTAX_ONIGURUMA: the default syntax
// that the Rust onig crate, and so Hugging Face tokenizers, compiles with),
// so \p{L}, \p{N}{1,3}, (?i:...) and (?!\S) in a tokenizer.json mean here
// what they mean there. Also split_by_matches, the four ways a pre-tokenizer
// keeps or drops what a pattern matched.
// Invariant: a compiled Regex is immutable; searches are const and may run
// concurrently (each has its own match region).
#pragma once
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

struct re_pattern_buffer;  // Oniguruma's regex type, kept out of this header

namespace parallm {

struct Span {
  size_t begin = 0;
  size_t end = 0;
};

class Regex {
 public:
  // where names the field the pattern came from, for the error message.
  Regex(std::string_view pattern, std::string_view where);
  ~Regex();
  Regex(Regex&& other) noexcept : regex_(std::exchange(other.regex_, nullptr)) {}
  Regex& operator=(Regex&&) = delete;
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // Non-overlapping matches left to right; after an empty match the search
  // moves on by one character.
  std::vector<Span> find_all(std::string_view text) const;

 private:
  re_pattern_buffer* regex_ = nullptr;
};

// A pattern that matches the literal text (a tokenizer.json "String" pattern).
std::string escape_regex(std::string_view literal);

enum class SplitBehavior { Isolated, Removed, MergedWithPrevious, MergedWithNext };

// Cuts [0, size) at the matches: Isolated keeps each match as its own piece,
// Removed drops it, MergedWith* glues it to a neighbour. Empty pieces dropped.
std::vector<Span> split_by_matches(size_t size, const std::vector<Span>& matches,
                                   SplitBehavior behavior);

}  // namespace parallm
