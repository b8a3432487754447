// GGUF block formats (see quant_blocks.h). Built with -ffp-contract=off
// (CMakeLists.txt): the reference rounds each product before the next
// subtraction (Q4_K: (d*sc)*q - dmin*m), so a fused multiply-add would
// change bits.
#include "kernels/cpu/quant_blocks.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstring>

#include "base/error.h"
#include "tensor/half.h"

namespace parallm::cpu {

namespace {
constexpr int64_t kQK = 32;    // values of a Q8_0 / Q4_0 block
constexpr int64_t kQKK = 256;  // values of a K-quant super-block

constexpr std::array<QuantTraits, 4> kTraits = {{
    {"q8_0", 8, kQK, 2 + kQK},
    {"q4_0", 2, kQK, 2 + kQK / 2},
    {"q4_k", 12, kQKK, 2 + 2 + 12 + kQKK / 2},
    {"q6_k", 14, kQKK, kQKK / 2 + kQKK / 4 + kQKK / 16 + 2},
}};

uint16_t load_u16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}
void store_u16(uint8_t* p, uint16_t v) { std::memcpy(p, &v, 2); }
float load_f16(const uint8_t* p) { return f16_to_f32(load_u16(p)); }

}  // namespace

// Q4_K's 12 bytes of 6-bit scales and mins for 8 sub-blocks (gguf's
// Q4_K.get_scale_min): the low 6 bits of bytes 0-3 / 4-7 for sub-blocks 0-3,
// for 4-7 a nibble of bytes 8-11 and the top 2 bits of bytes 0-3 / 4-7.
void q4k_unpack_scales(const uint8_t* s, uint8_t* sc, uint8_t* m) {
  for (int j = 0; j < 4; ++j) {
    sc[j] = s[j] & 63;
    m[j] = s[j + 4] & 63;
    sc[j + 4] = static_cast<uint8_t>((s[j + 8] & 0x0F) | ((s[j] >> 6) << 4));
    m[j + 4] = static_cast<uint8_t>((s[j + 8] >> 4) | ((s[j + 4] >> 6) << 4));
  }
}

void q4k_pack_scales(const uint8_t* sc, const uint8_t* m, uint8_t* s) {
  for (int j = 0; j < 4; ++j) {
    s[j] = static_cast<uint8_t>(sc[j] | ((sc[j + 4] >> 4) << 6));
    s[j + 4] = static_cast<uint8_t>(m[j] | ((m[j + 4] >> 4) << 6));
    s[j + 8] = static_cast<uint8_t>((sc[j + 4] & 0x0F) | ((m[j + 4] & 0x0F) << 4));
  }
}

namespace {

void quantize_q8_0(const float* x, uint8_t* b) {
  float amax = 0.0f;
  for (int64_t i = 0; i < kQK; ++i) amax = std::max(amax, std::fabs(x[i]));
  const float d = amax / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  store_u16(b, f32_to_f16(d));
  for (int64_t i = 0; i < kQK; ++i)
    b[2 + i] = static_cast<uint8_t>(static_cast<int8_t>(std::round(x[i] * id)));
}

void dequantize_q8_0(const uint8_t* b, float* y) {
  const float d = load_f16(b);
  for (int64_t i = 0; i < kQK; ++i) y[i] = static_cast<float>(static_cast<int8_t>(b[2 + i])) * d;
}

void quantize_q4_0(const float* x, uint8_t* b) {
  // The value of largest magnitude, sign kept, maps to -8 (the first on ties).
  float amax = 0.0f, vmax = 0.0f;
  for (int64_t i = 0; i < kQK; ++i) {
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      vmax = x[i];
    }
  }
  const float d = vmax / -8.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  store_u16(b, f32_to_f16(d));
  for (int64_t i = 0; i < kQK / 2; ++i) {
    const int lo = std::min(15, static_cast<int>(std::trunc(x[i] * id + 8.5f)));
    const int hi = std::min(15, static_cast<int>(std::trunc(x[i + kQK / 2] * id + 8.5f)));
    b[2 + i] = static_cast<uint8_t>(lo | (hi << 4));
  }
}

void dequantize_q4_0(const uint8_t* b, float* y) {
  const float d = load_f16(b);
  for (int64_t i = 0; i < kQK / 2; ++i) {
    y[i] = d * static_cast<float>((b[2 + i] & 0x0F) - 8);
    y[i + kQK / 2] = d * static_cast<float>((b[2 + i] >> 4) - 8);
  }
}

// Q4_K: each sub-block of 32 spans [min(0, lo), hi] in 15 steps; the
// super-block's fp16 d and dmin scale 6-bit per-sub-block steps and mins.
void quantize_q4_k(const float* x, uint8_t* b) {
  float step[8], mins[8], max_step = 0.0f, max_min = 0.0f;
  for (int s = 0; s < 8; ++s) {
    const float* v = x + s * 32;
    float lo = 0.0f, hi = v[0];
    for (int i = 0; i < 32; ++i) {
      lo = std::min(lo, v[i]);
      hi = std::max(hi, v[i]);
    }
    step[s] = std::max(hi - lo, 0.0f) / 15.0f;
    mins[s] = -lo;
    max_step = std::max(max_step, step[s]);
    max_min = std::max(max_min, mins[s]);
  }
  const uint16_t dh = f32_to_f16(max_step / 63.0f), mh = f32_to_f16(max_min / 63.0f);
  const float d = f16_to_f32(dh), dmin = f16_to_f32(mh);
  uint8_t sc[8], m[8];
  for (int s = 0; s < 8; ++s) {
    sc[s] = d > 0.0f ? static_cast<uint8_t>(std::clamp(std::lround(step[s] / d), 0L, 63L)) : 0;
    m[s] = dmin > 0.0f ? static_cast<uint8_t>(std::clamp(std::lround(mins[s] / dmin), 0L, 63L)) : 0;
  }
  store_u16(b, dh);
  store_u16(b + 2, mh);
  q4k_pack_scales(sc, m, b + 4);
  uint8_t* qs = b + 16;
  for (int j = 0; j < 4; ++j) {
    for (int half = 0; half < 2; ++half) {
      const int s = 2 * j + half;
      const float ds = d * static_cast<float>(sc[s]), dm = dmin * static_cast<float>(m[s]);
      for (int l = 0; l < 32; ++l) {
        const long q = ds > 0.0f ? std::clamp(std::lround((x[s * 32 + l] + dm) / ds), 0L, 15L) : 0;
        if (half == 0)
          qs[j * 32 + l] = static_cast<uint8_t>(q);
        else
          qs[j * 32 + l] |= static_cast<uint8_t>(q << 4);
      }
    }
  }
}

void dequantize_q4_k(const uint8_t* b, float* y) {
  const float d = load_f16(b), dmin = load_f16(b + 2);
  uint8_t sc[8], m[8];
  q4k_unpack_scales(b + 4, sc, m);
  const uint8_t* qs = b + 16;
  for (int j = 0; j < 4; ++j) {
    for (int half = 0; half < 2; ++half) {
      const int s = 2 * j + half;
      const float ds = d * static_cast<float>(sc[s]), dm = dmin * static_cast<float>(m[s]);
      for (int l = 0; l < 32; ++l) {
        const int q = half == 0 ? (qs[j * 32 + l] & 0x0F) : (qs[j * 32 + l] >> 4);
        y[s * 32 + l] = ds * static_cast<float>(q) - dm;
      }
    }
  }
}

// Q6_K: ql (128 bytes, low 4 bits), qh (64, high 2 bits), 16 int8 scales
// (one per 16 values), fp16 d last. Value e = 128c + 32t + l of chunk c,
// quarter t: low bits from ql[64c + 32(t%2) + l] (high nibble when t >= 2),
// high bits from qh[32c + l] >> 2t; stored as q + 32.
int q6k_index_ql(int c, int t, int l) { return 64 * c + 32 * (t % 2) + l; }

void quantize_q6_k(const float* x, uint8_t* b) {
  float step[16], max_step = 0.0f;
  for (int s = 0; s < 16; ++s) {
    float amax = 0.0f;
    for (int i = 0; i < 16; ++i) amax = std::max(amax, std::fabs(x[s * 16 + i]));
    step[s] = amax / 31.0f;
    max_step = std::max(max_step, step[s]);
  }
  const uint16_t dh = f32_to_f16(max_step / 127.0f);
  const float d = f16_to_f32(dh);
  uint8_t* ql = b;
  uint8_t* qh = b + 128;
  auto* scales = reinterpret_cast<int8_t*>(b + 192);
  std::memset(b, 0, 192);
  for (int s = 0; s < 16; ++s)
    scales[s] = d > 0.0f ? static_cast<int8_t>(std::clamp(std::lround(step[s] / d), 0L, 127L)) : 0;
  for (int c = 0; c < 2; ++c) {
    for (int t = 0; t < 4; ++t) {
      for (int l = 0; l < 32; ++l) {
        const int e = 128 * c + 32 * t + l;
        const float ds = d * static_cast<float>(scales[e / 16]);
        const long q = ds > 0.0f ? std::clamp(std::lround(x[e] / ds), -32L, 31L) + 32 : 32;
        ql[q6k_index_ql(c, t, l)] |= static_cast<uint8_t>((q & 0x0F) << (t >= 2 ? 4 : 0));
        qh[32 * c + l] |= static_cast<uint8_t>((q >> 4) << (2 * t));
      }
    }
  }
  store_u16(b + 208, dh);
}

void dequantize_q6_k(const uint8_t* b, float* y) {
  const uint8_t* ql = b;
  const uint8_t* qh = b + 128;
  const auto* scales = reinterpret_cast<const int8_t*>(b + 192);
  const float d = load_f16(b + 208);
  for (int c = 0; c < 2; ++c) {
    for (int t = 0; t < 4; ++t) {
      for (int l = 0; l < 32; ++l) {
        const int e = 128 * c + 32 * t + l;
        const int lo = (ql[q6k_index_ql(c, t, l)] >> (t >= 2 ? 4 : 0)) & 0x0F;
        const int hi = (qh[32 * c + l] >> (2 * t)) & 0x03;
        const float ds = d * static_cast<float>(scales[e / 16]);
        y[e] = ds * static_cast<float>((lo | (hi << 4)) - 32);
      }
    }
  }
}

void check_whole_blocks(QuantType t, int64_t n) {
  const int64_t k = quant_traits(t).block_elems;
  PX_CHECK(n % k == 0, "{}: {} values are not a whole number of blocks of {}",
           quant_traits(t).name, n, k);
}
}  // namespace

const QuantTraits& quant_traits(QuantType t) { return kTraits[static_cast<size_t>(t)]; }

std::optional<QuantType> quant_type_from_ggml(int ggml_type) {
  for (size_t i = 0; i < kTraits.size(); ++i)
    if (kTraits[i].ggml_type == ggml_type) return static_cast<QuantType>(i);
  return std::nullopt;
}

QuantType quant_type_from_name(const std::string& name) {
  std::string low = name;
  std::ranges::transform(low, low.begin(), [](unsigned char ch) { return std::tolower(ch); });
  for (size_t i = 0; i < kTraits.size(); ++i)
    if (low == kTraits[i].name) return static_cast<QuantType>(i);
  PX_FAIL("unknown quantisation type '{}' (have: q8_0, q4_0, q4_k, q6_k)", name);
}

int64_t quant_row_bytes(QuantType t, int64_t cols) {
  check_whole_blocks(t, cols);
  return cols / quant_traits(t).block_elems * quant_traits(t).block_bytes;
}

double quant_bits_per_value(QuantType t) {
  return 8.0 * static_cast<double>(quant_traits(t).block_bytes) /
         static_cast<double>(quant_traits(t).block_elems);
}

void quantize_blocks(QuantType t, const float* x, int64_t n, uint8_t* out) {
  check_whole_blocks(t, n);
  const QuantTraits& tr = quant_traits(t);
  for (int64_t b = 0; b < n / tr.block_elems; ++b) {
    const float* xb = x + b * tr.block_elems;
    uint8_t* ob = out + b * tr.block_bytes;
    switch (t) {
      case QuantType::Q8_0: quantize_q8_0(xb, ob); break;
      case QuantType::Q4_0: quantize_q4_0(xb, ob); break;
      case QuantType::Q4_K: quantize_q4_k(xb, ob); break;
      case QuantType::Q6_K: quantize_q6_k(xb, ob); break;
    }
  }
}

void dequantize_blocks(QuantType t, const uint8_t* in, int64_t n, float* out) {
  check_whole_blocks(t, n);
  const QuantTraits& tr = quant_traits(t);
  for (int64_t b = 0; b < n / tr.block_elems; ++b) {
    const uint8_t* ib = in + b * tr.block_bytes;
    float* ob = out + b * tr.block_elems;
    switch (t) {
      case QuantType::Q8_0: dequantize_q8_0(ib, ob); break;
      case QuantType::Q4_0: dequantize_q4_0(ib, ob); break;
      case QuantType::Q4_K: dequantize_q4_k(ib, ob); break;
      case QuantType::Q6_K: dequantize_q6_k(ib, ob); break;
    }
  }
}

}  // namespace parallm::cpu
