// The 8-row kernels over packed groups (quant_packed.h): per block, each
// vector of codes meets 4 activation values broadcast to every lane, so a
// lane accumulates one row's int32 product; offset codes (Q4_0's 8, the
// VNNI Q8_0's 128) come off once per block as the activation's sum times
// the offset; the 8 rows' scales come as one vector. AVX2 without VNNI
// widens with vpmaddubsw + vpmaddwd (exact: |code| <= 15, or Q8_0 by the
// sign trick, |w| <= 128 and |x| <= 127, pairs below 2^15).
#include "kernels/cpu/quant_packed_dot.h"

#include <cstring>

#include "base/error.h"

#include "kernels/cpu/quant_simd.h"

namespace parallm::cpu {

#ifdef PX_QUANT_AVX2
namespace {

inline __m256i bcast4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

using quant_simd::dpbusd;
using quant_simd::load32;

inline __m256 half8(const uint8_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
inline __m256 u8x8(const uint8_t* p) {
  return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
}

// Independent int32 accumulators per activation row: with one or two rows
// a single chain of vpdpbusd waits on its own latency (about 4 cycles each)
// instead of issuing two a cycle, so the block's products are spread over
// chains(M) chains and added at the end. Integer sums are exact, so the
// result is the same bits for every M.
constexpr int chains(int M) { return M == 1 ? 4 : M == 2 ? 2 : 1; }

template <int M, int C>
inline void zero(__m256i (&p)[M][C]) {
  for (int m = 0; m < M; ++m)
    for (int c = 0; c < C; ++c) p[m][c] = _mm256_setzero_si256();
}
template <int C>
inline __m256i total(const __m256i (&p)[C]) {
  __m256i t = p[0];
  for (int c = 1; c < C; ++c) t = _mm256_add_epi32(t, p[c]);
  return t;
}

template <int M>
void store(const __m256* acc, float* out, int64_t ldc, int valid) {
  for (int m = 0; m < M; ++m) {
    if (valid == 8) {
      _mm256_storeu_ps(out + m * ldc, acc[m]);
    } else {
      float t[8];
      _mm256_storeu_ps(t, acc[m]);
      std::memcpy(out + m * ldc, t, sizeof(float) * static_cast<size_t>(valid));
    }
  }
}

template <bool kVnni, int M>
void q8_0_group(const uint8_t* g, const QuantRows& x, float* out, int64_t ldc, int valid) {
  const int64_t nb = x.K / 32;
  __m256 acc[M];
  for (int m = 0; m < M; ++m) acc[m] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b, g += 16 + 256) {
    const __m256 dw = half8(g);
    constexpr int C = chains(M);
    __m256i pc[M][C];
    zero(pc);
    for (int j = 0; j < 8; ++j) {
      const __m256i w = load32(g + 16 + 32 * j);
      if constexpr (kVnni) {  // codes biased by 128: unsigned
        for (int m = 0; m < M; ++m)
          pc[m][j % C] = dpbusd<true>(pc[m][j % C], w, bcast4(x.q + m * x.K + b * 32 + 4 * j));
      } else {
        const __m256i aw = _mm256_sign_epi8(w, w);
        for (int m = 0; m < M; ++m)
          pc[m][j % C] = dpbusd<false>(pc[m][j % C], aw,
                                       _mm256_sign_epi8(bcast4(x.q + m * x.K + b * 32 + 4 * j), w));
      }
    }
    for (int m = 0; m < M; ++m) {
      __m256i p = total(pc[m]);
      if constexpr (kVnni) p = _mm256_sub_epi32(p, _mm256_set1_epi32(128 * x.sum[m * nb + b]));
      acc[m] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p),
                               _mm256_mul_ps(dw, _mm256_set1_ps(x.d[m * nb + b])), acc[m]);
    }
  }
  store<M>(acc, out, ldc, valid);
}

template <bool kVnni, int M>
void q4_0_group(const uint8_t* g, const QuantRows& x, float* out, int64_t ldc, int valid) {
  const int64_t nb = x.K / 32;
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  __m256 acc[M];
  for (int m = 0; m < M; ++m) acc[m] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b, g += 16 + 128) {
    const __m256 dw = half8(g);
    constexpr int C = chains(M);
    __m256i pc[M][C];
    zero(pc);
    for (int j = 0; j < 4; ++j) {
      const __m256i v = load32(g + 16 + 32 * j);
      const __m256i lo = _mm256_and_si256(v, low4);
      const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), low4);
      for (int m = 0; m < M; ++m) {
        const int8_t* xq = x.q + m * x.K + b * 32 + 8 * j;
        __m256i& p0 = pc[m][(2 * j) % C];
        p0 = dpbusd<kVnni>(p0, lo, bcast4(xq));
        __m256i& p1 = pc[m][(2 * j + 1) % C];
        p1 = dpbusd<kVnni>(p1, hi, bcast4(xq + 4));
      }
    }
    for (int m = 0; m < M; ++m) {
      const __m256i p = _mm256_sub_epi32(total(pc[m]), _mm256_set1_epi32(8 * x.sum[m * nb + b]));
      acc[m] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p),
                               _mm256_mul_ps(dw, _mm256_set1_ps(x.d[m * nb + b])), acc[m]);
    }
  }
  store<M>(acc, out, ldc, valid);
}

template <bool kVnni, int M>
void q4_k_group(const uint8_t* g, const QuantRows& x, float* out, int64_t ldc, int valid) {
  const int64_t nsb = x.K / 256, nx = x.K / 32;
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  __m256 acc[M];
  for (int m = 0; m < M; ++m) acc[m] = _mm256_setzero_ps();
  for (int64_t sb = 0; sb < nsb; ++sb, g += 1184) {
    const __m256 d = half8(g), dmin = half8(g + 16);
    for (int j = 0; j < 4; ++j) {
      constexpr int C = chains(M);
      __m256i lc[M][C], hc[M][C];
      zero(lc);
      zero(hc);
      for (int k = 0; k < 8; ++k) {
        const __m256i v = load32(g + 160 + (8 * j + k) * 32);
        const __m256i lo = _mm256_and_si256(v, low4);
        const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), low4);
        for (int m = 0; m < M; ++m) {
          const int8_t* xq = x.q + m * x.K + sb * 256 + 64 * j + 4 * k;
          lc[m][k % C] = dpbusd<kVnni>(lc[m][k % C], lo, bcast4(xq));
          hc[m][k % C] = dpbusd<kVnni>(hc[m][k % C], hi, bcast4(xq + 32));
        }
      }
      __m256i plo[M], phi[M];
      for (int m = 0; m < M; ++m) {
        plo[m] = total(lc[m]);
        phi[m] = total(hc[m]);
      }
      const int s = 2 * j;
      const __m256 s0 = _mm256_mul_ps(d, u8x8(g + 32 + 8 * s));
      const __m256 s1 = _mm256_mul_ps(d, u8x8(g + 32 + 8 * (s + 1)));
      const __m256 m0 = _mm256_mul_ps(dmin, u8x8(g + 96 + 8 * s));
      const __m256 m1 = _mm256_mul_ps(dmin, u8x8(g + 96 + 8 * (s + 1)));
      for (int m = 0; m < M; ++m) {
        const int64_t at = m * nx + sb * 8 + s;
        acc[m] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(plo[m]),
                                 _mm256_mul_ps(s0, _mm256_set1_ps(x.d[at])), acc[m]);
        acc[m] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(phi[m]),
                                 _mm256_mul_ps(s1, _mm256_set1_ps(x.d[at + 1])), acc[m]);
        acc[m] = _mm256_fnmadd_ps(m0, _mm256_set1_ps(x.s[at]), acc[m]);
        acc[m] = _mm256_fnmadd_ps(m1, _mm256_set1_ps(x.s[at + 1]), acc[m]);
      }
    }
  }
  store<M>(acc, out, ldc, valid);
}

template <bool kVnni, int M>
PackedGroupFn fn_for(QuantType t) {
  switch (t) {
    case QuantType::Q8_0: return q8_0_group<kVnni, M>;
    case QuantType::Q4_0: return q4_0_group<kVnni, M>;
    case QuantType::Q4_K: return q4_k_group<kVnni, M>;
    case QuantType::Q6_K: break;
  }
  PX_FAIL("{} blocks are not packed", quant_traits(t).name);
}

template <bool kVnni>
PackedGroupFn by_rows(QuantType t, int M) {
  switch (M) {
    case 1: return fn_for<kVnni, 1>(t);
    case 2: return fn_for<kVnni, 2>(t);
    case 3: return fn_for<kVnni, 3>(t);
    case 4: return fn_for<kVnni, 4>(t);
    case 5: return fn_for<kVnni, 5>(t);
    case 6: return fn_for<kVnni, 6>(t);
    case 7: return fn_for<kVnni, 7>(t);
    case 8: return fn_for<kVnni, 8>(t);
    default: PX_FAIL("packed dot products take 1 to 8 rows at a time, not {}", M);
  }
}
}  // namespace
#endif  // PX_QUANT_AVX2

PackedGroupFn packed_group_fn(bool vnni, QuantType t, int M) {
#ifdef PX_QUANT_VNNI
  if (vnni) return by_rows<true>(t, M);
#endif
#ifdef PX_QUANT_AVX2
  PX_CHECK(!vnni, "this build has no AVX512-VNNI packed kernels");
  return by_rows<false>(t, M);
#else
  PX_FAIL("this build has no packed quantised kernels (AVX2 needed)");
#endif
}

}  // namespace parallm::cpu
