// bf16 and f16 conversions (round to nearest even). bf16 is the top half of an
// f32; f16 is IEEE binary16. Used for storage and for reduced-precision I/O.
#pragma once
#include <cstdint>
#include <cstring>

namespace parallm {

inline uint16_t f32_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((u >> 16) | 0x40);  // NaN stays NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

inline float bf16_to_f32(uint16_t h) {
  uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

uint16_t f32_to_f16(float f);
float f16_to_f32(uint16_t h);

}  // namespace parallm
