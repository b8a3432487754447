#include "kernels/cpu/nf4.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "base/error.h"

// Every product and sum here must round exactly as bitsandbytes' f32 torch
// ops do (the CMake rule for this file disables FMA contraction).

namespace parallm::cpu {
namespace {

// bnb 0.50.2's create_dynamic_map(signed=True, max_exponent_bits=7,
// total_bits=8), listed as data: bnb builds it from torch's f32 linspace,
// whose roundings are torch's own (tests check it within one f32 ulp of
// the formula, and tests/reference against bnb itself, exactly).
constexpr std::array<float, 256> kDynamicMap = {
    -0.992968738f,    -0.978906214f,    -0.96484375f,     -0.950781226f,
    -0.936718702f,    -0.922656238f,    -0.908593774f,    -0.89453125f,
    -0.880468726f,    -0.866406202f,    -0.852343738f,    -0.838281214f,
    -0.82421875f,     -0.810156226f,    -0.796093702f,    -0.782031238f,
    -0.767968774f,    -0.75390625f,     -0.739843786f,    -0.725781262f,
    -0.711718798f,    -0.697656274f,    -0.68359375f,     -0.669531286f,
    -0.655468762f,    -0.641406238f,    -0.627343774f,    -0.61328125f,
    -0.599218726f,    -0.585156262f,    -0.571093798f,    -0.557031274f,
    -0.54296875f,     -0.528906226f,    -0.514843762f,    -0.500781238f,
    -0.486718774f,    -0.47265625f,     -0.458593726f,    -0.444531262f,
    -0.430468738f,    -0.416406214f,    -0.40234375f,     -0.388281226f,
    -0.374218762f,    -0.360156238f,    -0.346093714f,    -0.33203125f,
    -0.317968726f,    -0.303906262f,    -0.289843738f,    -0.275781274f,
    -0.26171875f,     -0.247656256f,    -0.233593762f,    -0.219531253f,
    -0.205468744f,    -0.19140625f,     -0.177343741f,    -0.163281247f,
    -0.149218753f,    -0.135156244f,    -0.12109375f,     -0.107031256f,
    -0.0985937491f,   -0.0957812443f,   -0.0929687545f,   -0.0901562497f,
    -0.0873437524f,   -0.0845312476f,   -0.0817187428f,   -0.078906253f,
    -0.0760937482f,   -0.0732812509f,   -0.0704687461f,   -0.0676562563f,
    -0.0648437515f,   -0.0620312467f,   -0.0592187531f,   -0.0564062484f,
    -0.053593751f,    -0.05078125f,     -0.047968749f,    -0.0451562516f,
    -0.0423437469f,   -0.0395312496f,   -0.0367187522f,   -0.0339062475f,
    -0.0310937501f,   -0.0282812472f,   -0.0254687499f,   -0.0226562507f,
    -0.0198437497f,   -0.0170312505f,   -0.0142187504f,   -0.0114062503f,
    -0.00971874967f,  -0.00915624946f,  -0.00859375019f,  -0.00803124998f,
    -0.00746874977f,  -0.00690625003f,  -0.00634374982f,  -0.00578125007f,
    -0.00521875033f,  -0.00465624966f,  -0.00409374991f,  -0.00353124971f,
    -0.00296874996f,  -0.00240624999f,  -0.00184375001f,  -0.00128124992f,
    -0.000943750085f, -0.000831249985f, -0.00071875006f,  -0.000606250076f,
    -0.000493750034f, -0.000381250022f, -0.000268750038f, -0.000156250011f,
    -8.87499991e-05f, -6.62500024e-05f, -4.37499984e-05f, -2.12499981e-05f,
    -7.7499999e-06f,  -3.25000019e-06f, -5.50000038e-07f, 0.0f,
    5.50000038e-07f,  3.25000019e-06f,  7.7499999e-06f,   2.12499981e-05f,
    4.37499984e-05f,  6.62500024e-05f,  8.87499991e-05f,  0.000156250011f,
    0.000268750038f,  0.000381250022f,  0.000493750034f,  0.000606250076f,
    0.00071875006f,   0.000831249985f,  0.000943750085f,  0.00128124992f,
    0.00184375001f,   0.00240624999f,   0.00296874996f,   0.00353124971f,
    0.00409374991f,   0.00465624966f,   0.00521875033f,   0.00578125007f,
    0.00634374982f,   0.00690625003f,   0.00746874977f,   0.00803124998f,
    0.00859375019f,   0.00915624946f,   0.00971874967f,   0.0114062503f,
    0.0142187504f,    0.0170312505f,    0.0198437497f,    0.0226562507f,
    0.0254687499f,    0.0282812472f,    0.0310937501f,    0.0339062475f,
    0.0367187522f,    0.0395312496f,    0.0423437469f,    0.0451562516f,
    0.047968749f,     0.05078125f,      0.053593751f,     0.0564062484f,
    0.0592187531f,    0.0620312467f,    0.0648437515f,    0.0676562563f,
    0.0704687461f,    0.0732812509f,    0.0760937482f,    0.078906253f,
    0.0817187428f,    0.0845312476f,    0.0873437524f,    0.0901562497f,
    0.0929687545f,    0.0957812443f,    0.0985937491f,    0.107031256f,
    0.12109375f,      0.135156244f,     0.149218753f,     0.163281247f,
    0.177343741f,     0.19140625f,      0.205468744f,     0.219531253f,
    0.233593762f,     0.247656256f,     0.26171875f,      0.275781274f,
    0.289843738f,     0.303906262f,     0.317968726f,     0.33203125f,
    0.346093714f,     0.360156238f,     0.374218762f,     0.388281226f,
    0.40234375f,      0.416406214f,     0.430468738f,     0.444531262f,
    0.458593726f,     0.47265625f,      0.486718774f,     0.500781238f,
    0.514843762f,     0.528906226f,     0.54296875f,      0.557031274f,
    0.571093798f,     0.585156262f,     0.599218726f,     0.61328125f,
    0.627343774f,     0.641406238f,     0.655468762f,     0.669531286f,
    0.68359375f,      0.697656274f,     0.711718798f,     0.725781262f,
    0.739843786f,     0.75390625f,      0.767968774f,     0.782031238f,
    0.796093702f,     0.810156226f,     0.82421875f,      0.838281214f,
    0.852343738f,     0.866406202f,     0.880468726f,     0.89453125f,
    0.908593774f,     0.922656238f,     0.936718702f,     0.950781226f,
    0.96484375f,      0.978906214f,     0.992968738f,     1.0f,
};

// Midpoints of a sorted codebook, rounded to f32 as bnb's (a + b) / 2 is.
template <size_t N>
std::array<float, N - 1> midpoints(const std::array<float, N>& code) {
  std::array<float, N - 1> m{};
  for (size_t i = 0; i + 1 < N; ++i) m[i] = (code[i] + code[i + 1]) / 2.0f;
  return m;
}

// 1 / max(absmax, 1e-38) in f32: bnb's reciprocal, so an all-zero block
// scales to zeros (code 0.0) instead of NaN.
float inverse_scale(float absmax) { return 1.0f / std::max(absmax, 1e-38f); }

float clamp_unit(float v) { return std::min(1.0f, std::max(-1.0f, v)); }

uint8_t bucket(const float* mid, int n_mid, float scaled) {
  // torch.bucketize (right=False): the first midpoint >= scaled.
  return static_cast<uint8_t>(std::lower_bound(mid, mid + n_mid, scaled) - mid);
}

}  // namespace

const std::array<float, 256>& dynamic_map_signed() { return kDynamicMap; }

void nf4_quantize(const float* x, int64_t n, int64_t blocksize, uint8_t* packed, float* absmax) {
  PX_CHECK(n >= 0 && blocksize > 0 && blocksize % 2 == 0,
           "nf4_quantize: n ({}) must be >= 0 and blocksize ({}) positive and even", n, blocksize);
  static const auto kMid = midpoints(kNf4Code);
  const int64_t blocks = nf4_ceil_div(n, blocksize);
  std::fill(packed, packed + nf4_ceil_div(n, 2), uint8_t{0});
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t lo = b * blocksize, hi = std::min(n, lo + blocksize);
    float m = 0.0f;
    for (int64_t i = lo; i < hi; ++i) m = std::max(m, std::fabs(x[i]));
    absmax[b] = m;
    const float inv = inverse_scale(m);
    for (int64_t i = lo; i < hi; ++i) {
      const uint8_t q = bucket(kMid.data(), 15, clamp_unit(x[i] * inv));
      // An even blocksize starts every block on a byte: no byte is shared by two threads.
      packed[i / 2] |= static_cast<uint8_t>(i % 2 == 0 ? q << 4 : q);
    }
  }
  // bnb pads an odd count with a 0.0 value: code 7 in the last low nibble.
  if (n % 2 == 1) packed[n / 2] |= 7;
}

void nf4_dequantize(const uint8_t* packed, const float* absmax, int64_t blocksize, int64_t begin,
                    int64_t end, float* out) {
  for (int64_t i = begin; i < end; ++i) {
    const uint8_t byte = packed[i / 2];
    const uint8_t q = i % 2 == 0 ? byte >> 4 : byte & 0xF;
    out[i - begin] = kNf4Code[q] * absmax[i / blocksize];
  }
}

void blockwise8_quantize(const float* x, int64_t n, int64_t blocksize, uint8_t* q, float* absmax) {
  static const auto kMid = midpoints(kDynamicMap);
  const int64_t blocks = nf4_ceil_div(n, blocksize);
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t lo = b * blocksize, hi = std::min(n, lo + blocksize);
    float m = 0.0f;
    for (int64_t i = lo; i < hi; ++i) m = std::max(m, std::fabs(x[i]));
    absmax[b] = m;
    const float inv = inverse_scale(m);
    for (int64_t i = lo; i < hi; ++i) q[i] = bucket(kMid.data(), 255, clamp_unit(x[i] * inv));
  }
}

void blockwise8_dequantize(const uint8_t* q, const float* absmax, int64_t n, int64_t blocksize,
                           float* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = kDynamicMap[q[i]] * absmax[i / blocksize];
}

float double_quantize_absmax(const float* absmax, int64_t n, uint8_t* q, float* absmax2) {
  PX_CHECK(n > 0, "double quantisation needs at least one absmax value, got {}", n);
  // torch's f32 mean sums with more precision than a running f32 sum; a
  // double sum rounded once is what it gives for these sizes (checked
  // against bnb in tests/reference).
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += absmax[i];
  const float offset = static_cast<float>(sum / static_cast<double>(n));
  std::vector<float> centred(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) centred[static_cast<size_t>(i)] = absmax[i] - offset;
  blockwise8_quantize(centred.data(), n, kAbsmaxBlockSize, q, absmax2);
  return offset;
}

void double_dequantize_absmax(const uint8_t* q, const float* absmax2, float offset, int64_t n,
                              float* absmax) {
  blockwise8_dequantize(q, absmax2, n, kAbsmaxBlockSize, absmax);
  for (int64_t i = 0; i < n; ++i) absmax[i] += offset;
}

int64_t nf4_storage_bytes(int64_t n, int64_t blocksize, bool double_quant) {
  const int64_t blocks = nf4_ceil_div(n, blocksize);
  const int64_t scales =
      double_quant ? blocks + 4 * nf4_ceil_div(blocks, kAbsmaxBlockSize) : 4 * blocks;
  return nf4_ceil_div(n, 2) + scales;
}

}  // namespace parallm::cpu
