// FP8 casts by integer arithmetic on the f32 bits (see fp8.h).
#include "tensor/fp8.h"

#include <cstring>

namespace parallm {
namespace {

struct Layout {
  int mant;            // mantissa bits
  int bias;            // exponent bias
  uint32_t max_code;   // largest finite magnitude code
  uint32_t nan_code;   // the NaN pattern (without the sign)
  uint32_t over_code;  // what an overflow becomes without saturation
};

constexpr Layout layout(Fp8Format f) {
  // E4M3fn: S.1111.111 is NaN, so 0x7E (448) is the largest finite value and
  // there is no infinity (ml_dtypes casts overflow to NaN). E5M2: 0x7C is
  // infinity, 0x7D-0x7F NaN (ml_dtypes writes 0x7E).
  return f == Fp8Format::E4M3 ? Layout{3, 7, 0x7E, 0x7F, 0x7F} : Layout{2, 15, 0x7B, 0x7E, 0x7C};
}

// Round-to-nearest-even of v >> s (s >= 1).
uint32_t shift_rne(uint32_t v, int s) {
  if (s >= 32) return 0;
  const uint32_t half = 1u << (s - 1), rest = v & ((1u << s) - 1), q = v >> s;
  return q + ((rest > half || (rest == half && (q & 1u))) ? 1u : 0u);
}

}  // namespace

float fp8_max(Fp8Format f) { return fp8_to_f32(static_cast<uint8_t>(layout(f).max_code), f); }

uint8_t f32_to_fp8(float x, Fp8Format f, Overflow o) {
  const Layout L = layout(f);
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  const uint32_t sign = (bits >> 24) & 0x80u, mag = bits & 0x7FFFFFFFu;
  if (mag > 0x7F800000u) return static_cast<uint8_t>(sign | L.nan_code);
  const uint32_t big = o == Overflow::Saturate ? L.max_code : L.over_code;
  if (mag == 0x7F800000u) return static_cast<uint8_t>(sign | big);
  const int e = static_cast<int>(mag >> 23) - 127;  // f32 subnormals: e = -127, far below fp8
  uint32_t q;
  if (e >= 1 - L.bias) {
    // Normal in fp8: re-bias the exponent in place and round the mantissa;
    // a carry out of the mantissa moves into the exponent, as it should.
    const uint32_t rebased = mag - (static_cast<uint32_t>(127 - L.bias) << 23);
    q = shift_rne(rebased, 23 - L.mant);
  } else {
    // Subnormal in fp8: the value in units of the smallest subnormal
    // 2^(1 - bias - mant), from the 24-bit significand.
    const uint32_t m = (mag & 0x7FFFFFu) | (e > -127 ? 0x800000u : 0u);
    const int s = 23 - L.mant + (1 - L.bias - e);
    q = shift_rne(m, s);
  }
  if (q > L.max_code) q = big;
  return static_cast<uint8_t>(sign | q);
}

float fp8_to_f32(uint8_t code, Fp8Format f) {
  const Layout L = layout(f);
  const uint32_t sign = static_cast<uint32_t>(code & 0x80u) << 24, mag = code & 0x7Fu;
  uint32_t bits;
  const uint32_t mant_mask = (1u << L.mant) - 1;
  const uint32_t exp = mag >> L.mant, mant = mag & mant_mask;
  if (f == Fp8Format::E4M3 ? mag == 0x7F : exp == 0x1F) {
    bits = mant != 0 || f == Fp8Format::E4M3 ? 0x7FC00000u : 0x7F800000u;  // NaN or infinity
  } else if (exp == 0) {
    // Subnormal: mant x 2^(1 - bias - mant), exact in f32.
    float v = static_cast<float>(mant);
    for (int i = 0; i < L.bias - 1 + L.mant; ++i) v *= 0.5f;
    std::memcpy(&bits, &v, 4);
  } else {
    bits = ((exp + 127 - L.bias) << 23) | (mant << (23 - L.mant));
  }
  bits |= sign;
  float out;
  std::memcpy(&out, &bits, 4);
  return out;
}

void f32_to_fp8(const float* in, uint8_t* out, size_t n, Fp8Format f, Overflow o) {
  for (size_t i = 0; i < n; ++i) out[i] = f32_to_fp8(in[i], f, o);
}

void fp8_to_f32(const uint8_t* in, float* out, size_t n, Fp8Format f) {
  for (size_t i = 0; i < n; ++i) out[i] = fp8_to_f32(in[i], f);
}

}  // namespace parallm
