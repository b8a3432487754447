// FP8 formats (OCP 8-bit floating point, as NVIDIA Hopper and ml_dtypes
// name them): E4M3 "fn" (bias 7, no infinities, one NaN pattern per sign,
// largest finite 448) and E5M2 (bias 15, IEEE-style infinities and NaNs,
// largest finite 57344). Casts from f32 round to nearest even, subnormals
// included. Two overflow rules: `Overflow::NonFinite` is ml_dtypes' cast
// (E4M3: NaN, E5M2: infinity), `Overflow::Saturate` clamps finite values
// and infinities to the largest finite value, as FP8 training casts do after
// scaling (Transformer Engine). NaN stays NaN with its sign in both.
// Invariant: every code decodes to an f32 that casts back to that code.
#pragma once
#include <cstddef>
#include <cstdint>

namespace parallm {

enum class Fp8Format : uint8_t { E4M3, E5M2 };
enum class Overflow : uint8_t { NonFinite, Saturate };

uint8_t f32_to_fp8(float x, Fp8Format f, Overflow o = Overflow::Saturate);
float fp8_to_f32(uint8_t code, Fp8Format f);
// The largest finite magnitude: 448 (E4M3), 57344 (E5M2).
float fp8_max(Fp8Format f);

// Array casts (out[i] = cast of in[i]); n elements.
void f32_to_fp8(const float* in, uint8_t* out, size_t n, Fp8Format f,
                Overflow o = Overflow::Saturate);
void fp8_to_f32(const uint8_t* in, float* out, size_t n, Fp8Format f);

}  // namespace parallm
