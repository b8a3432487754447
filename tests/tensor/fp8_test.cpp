// FP8 casts (tensor/fp8.h) on their own: every code decodes and casts back
// to itself, midpoints between neighbours round to the even code, overflow
// saturates or becomes NaN / infinity by the rule asked for, NaN keeps its
// sign, and values below half the smallest subnormal become signed zero.
// (reference.fp8_ml_dtypes holds the casts bit for bit to ml_dtypes.)
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "tensor/fp8.h"

namespace parallm {
namespace {

bool is_nan_code(uint8_t c, Fp8Format f) { return std::isnan(fp8_to_f32(c, f)); }

TEST(Fp8, EveryCodeRoundTrips) {
  for (Fp8Format f : {Fp8Format::E4M3, Fp8Format::E5M2})
    for (int c = 0; c < 256; ++c) {
      const auto code = static_cast<uint8_t>(c);
      const float v = fp8_to_f32(code, f);
      if (std::isnan(v)) continue;
      EXPECT_EQ(f32_to_fp8(v, f, Overflow::NonFinite), code) << c;
      if (!std::isinf(v)) EXPECT_EQ(f32_to_fp8(v, f, Overflow::Saturate), code) << c;
    }
}

TEST(Fp8, KnownValues) {
  EXPECT_EQ(fp8_max(Fp8Format::E4M3), 448.0f);
  EXPECT_EQ(fp8_max(Fp8Format::E5M2), 57344.0f);
  EXPECT_EQ(fp8_to_f32(0x01, Fp8Format::E4M3), std::ldexp(1.0f, -9));   // smallest subnormal
  EXPECT_EQ(fp8_to_f32(0x08, Fp8Format::E4M3), std::ldexp(1.0f, -6));   // smallest normal
  EXPECT_EQ(fp8_to_f32(0x01, Fp8Format::E5M2), std::ldexp(1.0f, -16));
  EXPECT_EQ(fp8_to_f32(0x38, Fp8Format::E4M3), 1.0f);
  EXPECT_EQ(fp8_to_f32(0x3C, Fp8Format::E5M2), 1.0f);
  EXPECT_TRUE(std::isinf(fp8_to_f32(0x7C, Fp8Format::E5M2)));
  EXPECT_TRUE(std::isnan(fp8_to_f32(0x7F, Fp8Format::E4M3)));
  EXPECT_TRUE(std::signbit(fp8_to_f32(0x80, Fp8Format::E4M3)));  // -0
}

// Between two neighbouring codes a and a+1 (both finite, same sign), the
// exact midpoint goes to the one with an even code; just above it, up.
TEST(Fp8, MidpointsRoundToEven) {
  for (Fp8Format f : {Fp8Format::E4M3, Fp8Format::E5M2})
    for (int c = 0; c < 0x7F; ++c) {
      const float lo = fp8_to_f32(static_cast<uint8_t>(c), f);
      const float hi = fp8_to_f32(static_cast<uint8_t>(c + 1), f);
      if (std::isnan(hi) || std::isinf(hi)) continue;
      const float mid = 0.5f * (lo + hi);  // exact: fp8 values have few bits
      const uint8_t even = static_cast<uint8_t>(c % 2 == 0 ? c : c + 1);
      EXPECT_EQ(f32_to_fp8(mid, f), even) << c;
      EXPECT_EQ(f32_to_fp8(-mid, f), even | 0x80) << c;
      EXPECT_EQ(f32_to_fp8(std::nextafter(mid, hi), f), c + 1) << c;
      EXPECT_EQ(f32_to_fp8(std::nextafter(mid, lo), f), c) << c;
    }
}

TEST(Fp8, OverflowNaNAndUnderflow) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (Fp8Format f : {Fp8Format::E4M3, Fp8Format::E5M2}) {
    const uint8_t max = f32_to_fp8(fp8_max(f), f);
    for (float big : {1e6f, inf, fp8_max(f) * 1.5f}) {
      EXPECT_EQ(f32_to_fp8(big, f, Overflow::Saturate), max);
      EXPECT_EQ(f32_to_fp8(-big, f, Overflow::Saturate), max | 0x80);
    }
    EXPECT_TRUE(is_nan_code(f32_to_fp8(nan, f), f));
    EXPECT_TRUE(is_nan_code(f32_to_fp8(-nan, f, Overflow::NonFinite), f));
    EXPECT_EQ(f32_to_fp8(-nan, f) & 0x80, 0x80);
    // Half the smallest subnormal rounds to even: zero; a hair above: the subnormal.
    const float tiny = fp8_to_f32(0x01, f);
    EXPECT_EQ(f32_to_fp8(0.5f * tiny, f), 0x00);
    EXPECT_EQ(f32_to_fp8(-0.5f * tiny, f), 0x80);
    EXPECT_EQ(f32_to_fp8(std::nextafter(0.5f * tiny, 1.0f), f), 0x01);
    EXPECT_EQ(f32_to_fp8(1e-30f, f), 0x00);
    EXPECT_EQ(f32_to_fp8(std::numeric_limits<float>::denorm_min(), f), 0x00);
  }
  // Without saturation: E4M3 has no infinity, so overflow is NaN; E5M2's is infinity.
  EXPECT_TRUE(is_nan_code(f32_to_fp8(1e6f, Fp8Format::E4M3, Overflow::NonFinite), Fp8Format::E4M3));
  EXPECT_EQ(f32_to_fp8(1e6f, Fp8Format::E5M2, Overflow::NonFinite), 0x7C);
  EXPECT_EQ(f32_to_fp8(-inf, Fp8Format::E5M2, Overflow::NonFinite), 0xFC);
  // 464 lies halfway between 448 and the NaN pattern: to even, 448; 480 and up overflow.
  EXPECT_EQ(f32_to_fp8(464.0f, Fp8Format::E4M3, Overflow::NonFinite), 0x7E);
  EXPECT_EQ(f32_to_fp8(480.0f, Fp8Format::E4M3, Overflow::NonFinite), 0x7F);
}

}  // namespace
}  // namespace parallm
