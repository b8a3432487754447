// Integer dot-product kernels for GGUF blocks (see quant_dot.h). Decode
// reads every weight byte once per token, so a kernel's job is to keep up
// with memory: per 32 values it loads the block once, widens 4- or 6-bit
// codes to signed bytes in registers, and for each activation row takes one
// int32 product (vpdpbusd, or vpmaddubsw + vpmaddwd) and one fused
// multiply-add of the two scales. Signed x signed products use the sign
// trick (|w| as unsigned, x given w's sign), exact for codes in [-128, 127]
// and activations in [-127, 127].
#include "kernels/cpu/quant_dot.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/error.h"
#include "tensor/half.h"

#include "kernels/cpu/quant_simd.h"

namespace parallm::cpu {

namespace {
constexpr int64_t kQK = 32;

float f16_at(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return f16_to_f32(h);
}


// ---- scalar: the codes as ints, block by block, in block order ----------

int dot32(const int8_t* w, const int8_t* x, int n) {
  int acc = 0;
  for (int i = 0; i < n; ++i) acc += static_cast<int>(w[i]) * static_cast<int>(x[i]);
  return acc;
}

// One row's signed codes and per-32 (or per-16 for Q6_K) scale, to share the
// scalar path across types: codes[e], scale of element e = sc[e / group].
template <int M>
void scalar_dot(QuantType t, const uint8_t* w, const QuantRows& x, float* res) {
  const QuantTraits& tr = quant_traits(t);
  const int64_t nb = x.K / tr.block_elems, nx = x.K / kQK;
  float acc[M] = {};
  int8_t codes[256];
  float scale[16], minv[8];
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* blk = w + b * tr.block_bytes;
    int group = 32;
    int nmin = 0;
    switch (t) {
      case QuantType::Q8_0:
        std::memcpy(codes, blk + 2, 32);
        scale[0] = f16_at(blk);
        break;
      case QuantType::Q4_0:
        for (int i = 0; i < 16; ++i) {
          codes[i] = static_cast<int8_t>((blk[2 + i] & 0x0F) - 8);
          codes[i + 16] = static_cast<int8_t>((blk[2 + i] >> 4) - 8);
        }
        scale[0] = f16_at(blk);
        break;
      case QuantType::Q4_K: {
        uint8_t sc[8], m[8];
        q4k_unpack_scales(blk + 4, sc, m);
        const float d = f16_at(blk), dmin = f16_at(blk + 2);
        for (int j = 0; j < 4; ++j)
          for (int l = 0; l < 32; ++l) {
            codes[64 * j + l] = static_cast<int8_t>(blk[16 + 32 * j + l] & 0x0F);
            codes[64 * j + 32 + l] = static_cast<int8_t>(blk[16 + 32 * j + l] >> 4);
          }
        for (int s = 0; s < 8; ++s) {
          scale[s] = d * static_cast<float>(sc[s]);
          minv[s] = dmin * static_cast<float>(m[s]);
        }
        nmin = 8;
        break;
      }
      case QuantType::Q6_K: {
        const uint8_t *ql = blk, *qh = blk + 128;
        for (int c = 0; c < 2; ++c)
          for (int tq = 0; tq < 4; ++tq)
            for (int l = 0; l < 32; ++l) {
              const int lo = (ql[64 * c + 32 * (tq % 2) + l] >> (tq >= 2 ? 4 : 0)) & 0x0F;
              const int hi = (qh[32 * c + l] >> (2 * tq)) & 0x03;
              codes[128 * c + 32 * tq + l] = static_cast<int8_t>((lo | (hi << 4)) - 32);
            }
        const float d = f16_at(blk + 208);
        for (int g = 0; g < 16; ++g) scale[g] = d * static_cast<float>(static_cast<int8_t>(blk[192 + g]));
        group = 16;
        break;
      }
    }
    const int64_t xb0 = b * tr.block_elems / kQK;
    for (int m = 0; m < M; ++m) {
      const int8_t* xq = x.q + m * x.K + b * tr.block_elems;
      for (int e = 0; e < tr.block_elems; e += group) {
        const float dx = x.d[m * nx + xb0 + e / kQK];
        acc[m] += scale[e / group] * dx * static_cast<float>(dot32(codes + e, xq + e, group));
      }
      for (int s = 0; s < nmin; ++s) acc[m] -= minv[s] * x.s[m * nx + xb0 + s];
    }
  }
  for (int m = 0; m < M; ++m) res[m] = acc[m];
}

template <QuantType T, int M>
void scalar_fn(const uint8_t* w, const QuantRows& x, float* res) {
  scalar_dot<M>(T, w, x, res);
}

#ifdef PX_QUANT_AVX2
// ---- SIMD: 32 values per 256-bit vector --------------------------------

using quant_simd::dpbusd;
using quant_simd::load32;

// u (unsigned bytes) . s (signed bytes), 4 adjacent products per int32 lane.
template <bool kVnni>
inline __m256i dot_us(__m256i u, __m256i s) {
  return dpbusd<kVnni>(_mm256_setzero_si256(), u, s);
}

// w (signed codes) . x (signed), by the sign trick.
template <bool kVnni>
inline __m256i dot_ss(__m256i w, __m256i x) {
  return dot_us<kVnni>(_mm256_sign_epi8(w, w), _mm256_sign_epi8(x, w));
}

inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}


template <bool kVnni, int M>
void q8_0_dot(const uint8_t* w, const QuantRows& x, float* res) {
  const int64_t nb = x.K / kQK;
  __m256 acc[M];
  for (int m = 0; m < M; ++m) acc[m] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* blk = w + b * 34;
    const float dw = quant_simd::f16_at(blk);
    const __m256i q = load32(blk + 2);
    for (int m = 0; m < M; ++m) {
      const __m256i p = dot_ss<kVnni>(q, load32(x.q + m * x.K + b * kQK));
      acc[m] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_set1_ps(dw * x.d[m * nb + b]), acc[m]);
    }
  }
  for (int m = 0; m < M; ++m) res[m] = hsum(acc[m]);
}

template <bool kVnni, int M>
void q4_0_dot(const uint8_t* w, const QuantRows& x, float* res) {
  const int64_t nb = x.K / kQK;
  const __m256i low4 = _mm256_set1_epi8(0x0F), eight = _mm256_set1_epi8(8);
  __m256 acc[M];
  for (int m = 0; m < M; ++m) acc[m] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* blk = w + b * 18;
    const float dw = quant_simd::f16_at(blk);
    const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 2));
    // Low nibbles are values 0-15, high nibbles 16-31: one vector in order.
    const __m256i codes =
        _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(raw, 4), raw), low4);
    const __m256i q = _mm256_sub_epi8(codes, eight);
    for (int m = 0; m < M; ++m) {
      const __m256i p = dot_ss<kVnni>(q, load32(x.q + m * x.K + b * kQK));
      acc[m] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_set1_ps(dw * x.d[m * nb + b]), acc[m]);
    }
  }
  for (int m = 0; m < M; ++m) res[m] = hsum(acc[m]);
}

// Q4_K: codes 0-15 are unsigned already; the mins come off once per row as
// sum over sub-blocks of dmin * m * (d_x * sum(q_x)).
template <bool kVnni, int M>
void q4_k_dot(const uint8_t* w, const QuantRows& x, float* res) {
  const int64_t nsb = x.K / 256, nx = x.K / kQK;
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  __m256 acc[M];
  float mins[M] = {};
  for (int m = 0; m < M; ++m) acc[m] = _mm256_setzero_ps();
  for (int64_t sb = 0; sb < nsb; ++sb) {
    const uint8_t* blk = w + sb * 144;
    const float d = quant_simd::f16_at(blk), dmin = quant_simd::f16_at(blk + 2);
    uint8_t sc[8], mn[8];
    q4k_unpack_scales(blk + 4, sc, mn);
    for (int j = 0; j < 4; ++j) {
      const __m256i raw = load32(blk + 16 + 32 * j);
      const __m256i lo = _mm256_and_si256(raw, low4);
      const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), low4);
      const float s0 = d * static_cast<float>(sc[2 * j]), s1 = d * static_cast<float>(sc[2 * j + 1]);
      for (int m = 0; m < M; ++m) {
        const int8_t* xq = x.q + m * x.K + sb * 256 + 64 * j;
        const float* dx = x.d + m * nx + sb * 8 + 2 * j;
        const __m256i p0 = dot_us<kVnni>(lo, load32(xq));
        const __m256i p1 = dot_us<kVnni>(hi, load32(xq + 32));
        acc[m] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p0), _mm256_set1_ps(s0 * dx[0]), acc[m]);
        acc[m] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p1), _mm256_set1_ps(s1 * dx[1]), acc[m]);
      }
    }
    for (int m = 0; m < M; ++m) {
      const float* sx = x.s + m * nx + sb * 8;
      float t = 0.0f;
      for (int s = 0; s < 8; ++s) t += static_cast<float>(mn[s]) * sx[s];
      mins[m] += dmin * t;
    }
  }
  for (int m = 0; m < M; ++m) res[m] = hsum(acc[m]) - mins[m];
}

// Q6_K: a quarter t of chunk c holds values 128c + 32t .. +31, two scale
// groups of 16: lanes 0-3 of the int32 products cover the first, 4-7 the
// second, so one vector of the two scales weights them. The 16 scales are
// widened once per super-block; each quarter's pair is a permute of them,
// and the quarters are unrolled so every shift is an immediate.
template <bool kVnni, int M, int T>
inline void q6_k_quarter(__m256i ql, __m256i qh, __m256 scales8, const QuantRows& x, int64_t e,
                         __m256* acc) {
  const __m256i low4 = _mm256_set1_epi8(0x0F), two = _mm256_set1_epi8(0x03);
  const __m256i lo = T < 2 ? _mm256_and_si256(ql, low4)
                           : _mm256_and_si256(_mm256_srli_epi16(ql, 4), low4);
  const __m256i hi = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * T), two), 4);
  const __m256i q = _mm256_sub_epi8(_mm256_or_si256(lo, hi), _mm256_set1_epi8(32));
  const __m256 sc = _mm256_permutevar8x32_ps(
      scales8, _mm256_setr_epi32(2 * T, 2 * T, 2 * T, 2 * T, 2 * T + 1, 2 * T + 1, 2 * T + 1,
                                 2 * T + 1));
  const __m256i aq = _mm256_sign_epi8(q, q);
  for (int m = 0; m < M; ++m) {
    const __m256i p = dot_us<kVnni>(aq, _mm256_sign_epi8(load32(x.q + m * x.K + e), q));
    const __m256 s = _mm256_mul_ps(sc, _mm256_set1_ps(x.d[m * (x.K / kQK) + e / kQK]));
    acc[m] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), s, acc[m]);
  }
}

template <bool kVnni, int M>
void q6_k_dot(const uint8_t* w, const QuantRows& x, float* res) {
  const int64_t nsb = x.K / 256;
  __m256 acc[M];
  for (int m = 0; m < M; ++m) acc[m] = _mm256_setzero_ps();
  for (int64_t sb = 0; sb < nsb; ++sb) {
    const uint8_t* blk = w + sb * 210;
    const __m256 d = _mm256_set1_ps(quant_simd::f16_at(blk + 208));
    for (int c = 0; c < 2; ++c) {
      // Scale groups 8c .. 8c + 7, times d.
      const __m256 scales8 = _mm256_mul_ps(
          d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(
                 _mm_loadl_epi64(reinterpret_cast<const __m128i*>(blk + 192 + 8 * c)))));
      const __m256i ql0 = load32(blk + 64 * c), ql1 = load32(blk + 64 * c + 32);
      const __m256i qh = load32(blk + 128 + 32 * c);
      const int64_t e = sb * 256 + 128 * c;
      q6_k_quarter<kVnni, M, 0>(ql0, qh, scales8, x, e, acc);
      q6_k_quarter<kVnni, M, 1>(ql1, qh, scales8, x, e + 32, acc);
      q6_k_quarter<kVnni, M, 2>(ql0, qh, scales8, x, e + 64, acc);
      q6_k_quarter<kVnni, M, 3>(ql1, qh, scales8, x, e + 96, acc);
    }
  }
  for (int m = 0; m < M; ++m) res[m] = hsum(acc[m]);
}

template <bool kVnni, int M>
QuantRowDotFn simd_fn(QuantType t) {
  switch (t) {
    case QuantType::Q8_0: return q8_0_dot<kVnni, M>;
    case QuantType::Q4_0: return q4_0_dot<kVnni, M>;
    case QuantType::Q4_K: return q4_k_dot<kVnni, M>;
    case QuantType::Q6_K: return q6_k_dot<kVnni, M>;
  }
  return nullptr;
}
#endif  // PX_QUANT_AVX2

template <int M>
QuantRowDotFn scalar_for(QuantType t) {
  switch (t) {
    case QuantType::Q8_0: return scalar_fn<QuantType::Q8_0, M>;
    case QuantType::Q4_0: return scalar_fn<QuantType::Q4_0, M>;
    case QuantType::Q4_K: return scalar_fn<QuantType::Q4_K, M>;
    case QuantType::Q6_K: return scalar_fn<QuantType::Q6_K, M>;
  }
  return nullptr;
}

template <int M>
QuantRowDotFn fn_for(int path, QuantType t) {
#ifdef PX_QUANT_VNNI
  if (path == 2) return simd_fn<true, M>(t);
#endif
#ifdef PX_QUANT_AVX2
  if (path == 1) return simd_fn<false, M>(t);
#endif
  PX_CHECK(path == 0, "quantised dot-product path {} is not built into this binary", path);
  return scalar_for<M>(t);
}
}  // namespace

void quantize_rows_q8(const float* x, int64_t M, int64_t K, int8_t* q, float* d, float* s,
                      int32_t* isum) {
  const int64_t nb = K / kQK;
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t b = 0; b < nb; ++b) {
      const float* v = x + m * K + b * kQK;
      float amax = 0.0f;
      for (int i = 0; i < kQK; ++i) amax = std::max(amax, std::fabs(v[i]));
      const float db = amax / 127.0f, id = db != 0.0f ? 1.0f / db : 0.0f;
      int sum = 0;
      for (int i = 0; i < kQK; ++i) {
        const int qi = static_cast<int>(std::nearbyint(v[i] * id));
        q[m * K + b * kQK + i] = static_cast<int8_t>(qi);
        sum += qi;
      }
      d[m * nb + b] = db;
      s[m * nb + b] = db * static_cast<float>(sum);
      isum[m * nb + b] = sum;
    }
  }
}

QuantRowDotFn quant_row_dot_fn(int path, QuantType t, int M) {
  switch (M) {
    case 1: return fn_for<1>(path, t);
    case 2: return fn_for<2>(path, t);
    case 3: return fn_for<3>(path, t);
    case 4: return fn_for<4>(path, t);
    case 5: return fn_for<5>(path, t);
    case 6: return fn_for<6>(path, t);
    case 7: return fn_for<7>(path, t);
    case 8: return fn_for<8>(path, t);
    default: PX_FAIL("quantised dot products take 1 to 8 rows at a time, not {}", M);
  }
}

bool quant_dot_built_avx2() {
#ifdef PX_QUANT_AVX2
  return true;
#else
  return false;
#endif
}

bool quant_dot_built_vnni() {
#ifdef PX_QUANT_VNNI
  return true;
#else
  return false;
#endif
}

}  // namespace parallm::cpu
