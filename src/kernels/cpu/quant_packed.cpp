// Packing of GGUF blocks for the 8-row kernels (see quant_packed.h). Pack
// and unpack walk the same map from a (row, value) to its place in each
// layout, one code at a time, so they are inverses by construction.
#include "kernels/cpu/quant_packed.h"

#include <cstring>

#include "base/error.h"

namespace parallm::cpu {

namespace {
// Where one 4- or 8-bit code lives: byte offset, and which nibble (-1: the whole byte).
struct Place {
  int64_t byte;
  int nibble;
};

uint8_t get(const uint8_t* base, Place p) {
  if (p.nibble < 0) return base[p.byte];
  return p.nibble == 0 ? (base[p.byte] & 0x0F) : (base[p.byte] >> 4);
}
void put(uint8_t* base, Place p, uint8_t v) {
  if (p.nibble < 0) {
    base[p.byte] = v;
    return;
  }
  base[p.byte] = p.nibble == 0 ? static_cast<uint8_t>((base[p.byte] & 0xF0) | v)
                               : static_cast<uint8_t>((base[p.byte] & 0x0F) | (v << 4));
}

// Bytes of a packed block (Q4_K: super-block) of 8 rows.
int64_t group_block_bytes(QuantType t) {
  switch (t) {
    case QuantType::Q8_0: return 16 + 8 * 32;
    case QuantType::Q4_0: return 16 + 8 * 16;
    case QuantType::Q4_K: return 16 + 16 + 64 + 64 + 8 * 128;
    case QuantType::Q6_K: break;
  }
  PX_FAIL("{} blocks are not packed", quant_traits(t).name);
}

// Code v of a block: its place in the GGUF block, and in the packed block for row r.
Place gguf_code(QuantType t, int v) {
  switch (t) {
    case QuantType::Q8_0: return {2 + v, -1};
    case QuantType::Q4_0: return {2 + v % 16, v >= 16 ? 1 : 0};
    default: {  // Q4_K: sub-block s = v / 32 in the low (even s) or high nibbles of pair s / 2
      const int s = v / 32, w = v % 32;
      return {16 + 32 * (s / 2) + w, s % 2};
    }
  }
}
Place packed_code(QuantType t, int r, int v) {
  switch (t) {
    case QuantType::Q8_0: return {16 + 32 * (v / 4) + 4 * r + v % 4, -1};
    case QuantType::Q4_0: {
      const int w = v % 8;
      return {16 + 32 * (v / 8) + 4 * r + w % 4, w >= 4 ? 1 : 0};
    }
    default: {
      const int s = v / 32, w = v % 32;
      return {160 + (8 * (s / 2) + w / 4) * 32 + 4 * r + w % 4, s % 2};
    }
  }
}

// One block of row r between its GGUF bytes g and the group's packed block p.
void move_block(QuantType t, int r, bool biased, bool to_packed, uint8_t* g, uint8_t* p) {
  const int n = static_cast<int>(quant_traits(t).block_elems);
  const uint8_t bias = biased && t == QuantType::Q8_0 ? 0x80 : 0x00;
  for (int v = 0; v < n; ++v) {
    const Place a = gguf_code(t, v), b = packed_code(t, r, v);
    if (to_packed)
      put(p, b, static_cast<uint8_t>(get(g, a) ^ bias));
    else
      put(g, a, static_cast<uint8_t>(get(p, b) ^ bias));
  }
  auto scale = [&](int64_t gat, int64_t pat) {
    if (to_packed)
      std::memcpy(p + pat, g + gat, 2);
    else
      std::memcpy(g + gat, p + pat, 2);
  };
  scale(0, 2 * r);
  if (t != QuantType::Q4_K) return;
  scale(2, 16 + 2 * r);
  uint8_t sc[8], m[8];
  if (to_packed) {
    q4k_unpack_scales(g + 4, sc, m);
    for (int s = 0; s < 8; ++s) {
      p[32 + 8 * s + r] = sc[s];
      p[96 + 8 * s + r] = m[s];
    }
  } else {
    for (int s = 0; s < 8; ++s) {
      sc[s] = p[32 + 8 * s + r];
      m[s] = p[96 + 8 * s + r];
    }
    q4k_pack_scales(sc, m, g + 4);
  }
}
}  // namespace

bool quant_packs(QuantType t) { return t != QuantType::Q6_K; }

int64_t packed_group_bytes(QuantType t, int64_t cols) {
  return cols / quant_traits(t).block_elems * group_block_bytes(t);
}

void pack_rows(QuantType t, int64_t rows, int64_t cols, const uint8_t* blocks, bool biased,
               uint8_t* out) {
  const int64_t nb = cols / quant_traits(t).block_elems, bb = quant_traits(t).block_bytes;
  const int64_t gb = group_block_bytes(t), groups = (rows + kPackRows - 1) / kPackRows;
  std::memset(out, 0, static_cast<size_t>(groups * nb * gb));  // padded rows: zero scales
  for (int64_t row = 0; row < rows; ++row) {
    uint8_t* group = out + row / kPackRows * nb * gb;
    for (int64_t b = 0; b < nb; ++b) {
      uint8_t tmp[256];
      std::memcpy(tmp, blocks + row * nb * bb + b * bb, static_cast<size_t>(bb));
      move_block(t, static_cast<int>(row % kPackRows), biased, true, tmp, group + b * gb);
    }
  }
}

void unpack_row(QuantType t, int64_t cols, const uint8_t* packed, bool biased, int64_t r,
                uint8_t* row_out) {
  const int64_t nb = cols / quant_traits(t).block_elems, bb = quant_traits(t).block_bytes;
  const int64_t gb = group_block_bytes(t);
  const uint8_t* group = packed + r / kPackRows * nb * gb;
  for (int64_t b = 0; b < nb; ++b) {
    uint8_t* g = row_out + b * bb;
    std::memset(g, 0, static_cast<size_t>(bb));
    move_block(t, static_cast<int>(r % kPackRows), biased, false, g,
               const_cast<uint8_t*>(group + b * gb));
  }
}

}  // namespace parallm::cpu
