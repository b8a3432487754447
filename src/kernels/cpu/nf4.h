// NF4 (QLoRA's 4-bit NormalFloat) and the 8-bit blockwise format that double
// quantisation stores absmax values in, bit-compatible with bitsandbytes
// (quant_type "nf4", quantize_4bit / dequantize_4bit / quantize_blockwise):
// a tensor is flattened row-major and cut into blocks of `blocksize` values
// (the last one may be short); each block keeps its fp32 absmax and each value
// the index of the nearest code of x / absmax (midpoints rounded down, as
// bnb's torch and CUDA kernels do). Two 4-bit indices per byte, the first
// element in the HIGH nibble. Dequantised value = code[index] * absmax.
#pragma once
#include <array>
#include <cstdint>

namespace parallm::cpu {

// bnb's NF4 codebook (quantiles of N(0, 1) normalised to [-1, 1], zero exact).
inline constexpr std::array<float, 16> kNf4Code = {-1.0f,
                                                   -0.6961928009986877f,
                                                   -0.5250730514526367f,
                                                   -0.39491748809814453f,
                                                   -0.28444138169288635f,
                                                   -0.18477343022823334f,
                                                   -0.09105003625154495f,
                                                   0.0f,
                                                   0.07958029955625534f,
                                                   0.16093020141124725f,
                                                   0.24611230194568634f,
                                                   0.33791524171829224f,
                                                   0.44070982933044434f,
                                                   0.5626170039176941f,
                                                   0.7229568362236023f,
                                                   1.0f};

inline constexpr int64_t kNf4BlockSize = 64;      // QLoRA's block of weights
inline constexpr int64_t kAbsmaxBlockSize = 256;  // double quantisation's block of absmax
inline int64_t nf4_ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// bnb's signed 8-bit dynamic map (create_dynamic_map(signed=True)): 256
// sorted values in [-1, 1] with a dynamic exponent, as bnb computes them.
const std::array<float, 256>& dynamic_map_signed();

// x (n) -> packed (ceil(n / 2) bytes), absmax (ceil(n / blocksize)); blocksize even.
void nf4_quantize(const float* x, int64_t n, int64_t blocksize, uint8_t* packed, float* absmax);
// Elements [begin, end) of the flat tensor into out[0, end - begin).
void nf4_dequantize(const uint8_t* packed, const float* absmax, int64_t blocksize, int64_t begin,
                    int64_t end, float* out);

// 8-bit blockwise: x (n) -> q (n), absmax (ceil(n / blocksize)), code = dynamic map.
void blockwise8_quantize(const float* x, int64_t n, int64_t blocksize, uint8_t* q, float* absmax);
void blockwise8_dequantize(const uint8_t* q, const float* absmax, int64_t n, int64_t blocksize,
                           float* out);

// Double quantisation of NF4's absmax values (bnb compress_statistics=True):
// offset = mean(absmax); absmax - offset quantised 8-bit in blocks of 256.
// absmax (n) -> q (n), absmax2 (ceil(n / 256)); returns the offset.
float double_quantize_absmax(const float* absmax, int64_t n, uint8_t* q, float* absmax2);
// The absmax values the weights are scaled by: code[q] * absmax2 + offset.
void double_dequantize_absmax(const uint8_t* q, const float* absmax2, float offset, int64_t n,
                              float* absmax);

// Bytes bnb's storage holds for n weights (packed nibbles + fp32 absmax, or
// with double quantisation 8-bit absmax + fp32 second-level absmax); the
// fp32 offset of double quantisation is one per tensor, not counted here.
int64_t nf4_storage_bytes(int64_t n, int64_t blocksize, bool double_quant);

}  // namespace parallm::cpu
