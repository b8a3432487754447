// Blockwise FP8 scaling (docs/fp8.md) and the GEMM over its blocks, the
// numerics of DeepSeek-V3's FP8 training and of OCP MX blocks, on the CPU:
// a (rows, cols) f32 matrix is cut into block_rows x block_cols blocks
// (DeepSeek: 1 x 128 tiles for activations and gradients, 128 x 128 for
// weights; MX: 1 x 32 with power-of-two scales); each block keeps one f32
// scale and its values as FP8 codes, code = cast(x / scale), scale =
// amax / fp8_max (or, with pow2, the power of two MX takes:
// 2^(floor(log2 amax) - emax of the element format)).
// The GEMM multiplies two such matrices whose blocks share the K width: per
// K block it sums the code products (exact products of 4- or 3-bit
// significands, summed in f32), multiplies that partial sum by the two
// blocks' scales and accumulates the result in f32, K block after K block:
// what Hopper's FP8 tensor cores do with DeepSeek's promotion of the
// accumulator to f32 every 128 products, with f32 where they keep ~14 bits.
#pragma once
#include <cstdint>
#include <vector>

#include "tensor/fp8.h"

namespace parallm::cpu {

struct Fp8Blocks {
  int64_t rows = 0, cols = 0, block_rows = 1, block_cols = 128;
  Fp8Format format = Fp8Format::E4M3;
  std::vector<uint8_t> codes;  // (rows, cols)
  std::vector<float> scales;   // (ceil(rows / block_rows), ceil(cols / block_cols))
  int64_t block_grid_cols() const { return (cols + block_cols - 1) / block_cols; }
  float scale(int64_t r, int64_t c) const {
    return scales[(r / block_rows) * block_grid_cols() + c / block_cols];
  }
};

// x (rows, cols), leading dimension ld. Saturating casts; an all-zero block
// gets scale 1.
Fp8Blocks fp8_quantize_blocks(const float* x, int64_t rows, int64_t cols, int64_t ld,
                              int64_t block_rows, int64_t block_cols, Fp8Format f,
                              bool pow2_scales = false);
// out (rows, cols) = code value x scale, each in f32.
void fp8_dequantize_blocks(const Fp8Blocks& q, float* out);

// C (M, N) = A B^T with A (M, K) and B (N, K) quantised with the same
// block_cols along K (A's block_rows and B's may differ); C overwritten.
void fp8_block_gemm_nt(const Fp8Blocks& A, const Fp8Blocks& B, float* C);

}  // namespace parallm::cpu
