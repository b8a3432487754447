// Python str operations on UTF-8 text, as chat templates call them (strip,
// len, slicing, split, case mapping), counted in code points as Python does.
// Invariant: results equal Python 3's on valid UTF-8; strip() without chars
// removes exactly the code points for which str.isspace() is true (U+00A0,
// U+3000, ... included), so `| trim` matches on any content.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace parallm::chat {

// Code points of s; invalid bytes decode as themselves (U+0080..U+00FF) so
// that nothing is lost.
std::vector<char32_t> utf8_decode(std::string_view s);
std::string utf8_encode(const std::vector<char32_t>& cps);
void utf8_append(std::string& out, char32_t cp);

bool python_isspace(char32_t cp);

enum class StripSide { Both, Left, Right };
// str.strip / lstrip / rstrip; chars = nullopt strips whitespace.
std::string python_strip(std::string_view s, const std::optional<std::string>& chars,
                         StripSide side);

int64_t python_len(std::string_view s);  // code points

// str.split(sep, maxsplit); sep = nullopt splits on runs of whitespace.
std::vector<std::string> python_split(std::string_view s, const std::optional<std::string>& sep,
                                      int64_t maxsplit);

// str.replace(old, new, count); count < 0 replaces all.
std::string python_replace(std::string_view s, std::string_view from, std::string_view to,
                           int64_t count);

// ASCII case mapping; nullopt when s holds a non-ASCII byte (Python would map
// it by Unicode tables we do not carry, so the caller refuses instead of
// diverging silently).
std::optional<std::string> ascii_upper(std::string_view s);
std::optional<std::string> ascii_lower(std::string_view s);
std::optional<std::string> ascii_capitalize(std::string_view s);

}  // namespace parallm::chat
