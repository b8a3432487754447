// UTF-8 helpers for tokenizers: decoding one code point, appending one, the
// length of the complete prefix of a byte string (what a stream may emit), and
// lossy conversion with Rust's String::from_utf8_lossy rules (one U+FFFD per
// maximal invalid subpart), which is what Hugging Face decoders produce.
// Invariant: utf8_lossy always returns valid UTF-8 and is the identity on it.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace parallm {

inline constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";  // U+FFFD

void append_utf8(std::string& out, char32_t cp);

// Decodes the code point at s[pos] and advances pos past it. An invalid
// sequence yields U+FFFD and advances by one byte.
char32_t next_code_point(std::string_view s, size_t& pos);

// Bytes at the start of s that can be emitted now: all of s except a trailing
// sequence that is a valid but unfinished multi-byte character.
size_t utf8_complete_prefix(std::string_view s);

std::string utf8_lossy(std::string_view bytes);
bool utf8_valid(std::string_view bytes);

}  // namespace parallm
