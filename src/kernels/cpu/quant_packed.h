// GGUF blocks repacked for decode: the same bytes, regrouped so that one
// 256-bit vector holds 4 codes of each of 8 output rows. A kernel then
// takes an int8 product for 8 rows at once against 4 activation values
// broadcast (vpdpbusd), keeps each row's sum in its own lane (no horizontal
// sums) and scales 8 rows with one vector of their block scales. Groups of
// 8 rows; the last group padded with zero blocks (zero scale: zero output).
// Q8_0, Q4_0 and Q4_K pack; Q6_K keeps the row layout (quant_dot.h).
// Invariant: unpack_row gives back the row's GGUF blocks bit for bit.
//
// Per group of 8 rows, for each block (Q4_K: super-block) in order:
//   Q8_0: 8 fp16 scales, then 8 vectors j: lane r = row r's codes 4j..4j+3
//         (as u8 code ^ 0x80 when `biased`: the VNNI kernel's unsigned side).
//   Q4_0: 8 fp16 scales, then 4 vectors j: lane r byte i = row r's code 8j+i
//         (low nibble) and 8j+4+i (high nibble), codes 0-15 (value = code - 8).
//   Q4_K: 8 fp16 d, 8 fp16 dmin, 8x8 u8 scales [sub-block][row], 8x8 u8
//         mins, then for each sub-block pair j, 8 vectors k: lane r byte i =
//         row r's code 4k+i of sub-block 2j (low) and of 2j+1 (high).
#pragma once
#include <cstdint>

#include "kernels/cpu/quant_blocks.h"

namespace parallm::cpu {

inline constexpr int64_t kPackRows = 8;

bool quant_packs(QuantType t);
// Bytes of one packed group of 8 rows of `cols` values.
int64_t packed_group_bytes(QuantType t, int64_t cols);
// rows x cols from GGUF row-major blocks into ceil(rows / 8) groups at out.
void pack_rows(QuantType t, int64_t rows, int64_t cols, const uint8_t* blocks, bool biased,
               uint8_t* out);
// Row r's GGUF blocks (quant_row_bytes(t, cols) bytes) from the packed groups.
void unpack_row(QuantType t, int64_t cols, const uint8_t* packed, bool biased, int64_t r,
                uint8_t* row_out);

}  // namespace parallm::cpu
