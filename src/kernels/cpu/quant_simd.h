// The 256-bit pieces the quantised dot-product kernels share (quant_dot.cpp,
// quant_packed_dot.cpp): which of them this build holds, the int8 product
// with its AVX2 fallback, and the loads. Included by kernel sources only.
#pragma once
#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include <immintrin.h>

#include <cstdint>
#include <cstring>
#define PX_QUANT_AVX2 1
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
#define PX_QUANT_VNNI 1
#endif

namespace parallm::cpu::quant_simd {

// acc + u (unsigned bytes) . s (signed bytes), 4 adjacent products per int32
// lane: vpdpbusd, or without VNNI vpmaddubsw + vpmaddwd (exact while every
// pair of products stays below 2^15, which each caller's code range ensures).
template <bool kVnni>
inline __m256i dpbusd(__m256i acc, __m256i u, __m256i s) {
#ifdef PX_QUANT_VNNI
  if constexpr (kVnni) return _mm256_dpbusd_epi32(acc, u, s);
#endif
  return _mm256_add_epi32(acc,
                          _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)));
}

inline __m256i load32(const void* p) {
  return _mm256_loadu_si256(static_cast<const __m256i*>(p));
}

// The fp16 at p, widened.
inline float f16_at(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}

}  // namespace parallm::cpu::quant_simd
#endif
