// The GPT-2 byte-to-unicode table: every byte maps to one printable code point
// so that byte-level BPE vocabularies are text. Printable Latin-1 bytes
// ('!'..'~', '¡'..'¬', '®'..'ÿ') map to themselves; the other 68 bytes map, in
// byte order, to U+0100, U+0101, ... Invariant: the table is a bijection, so
// byte_level_decode(byte_level_encode(b)) == b for every byte string b.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace parallm {

// The code point that stands for each byte.
const std::array<char32_t, 256>& byte_to_code_point();

// Each byte of bytes replaced by the UTF-8 of its code point.
std::string byte_level_encode(std::string_view bytes);

// Appends the bytes a byte-level token stands for. Returns false (and appends
// nothing) when a character of token is not in the table.
bool byte_level_decode(std::string_view token, std::string& out);

}  // namespace parallm
