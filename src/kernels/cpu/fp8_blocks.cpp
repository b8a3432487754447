// Blockwise FP8 quantisation and the block-promoted GEMM (fp8_blocks.h).
#include "kernels/cpu/fp8_blocks.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "kernels/cpu/matmul.h"

namespace parallm::cpu {
namespace {

// The exponent of the largest power of two in the element format (OCP MX:
// emax_elem), which a power-of-two block scale subtracts.
int emax(Fp8Format f) { return f == Fp8Format::E4M3 ? 8 : 15; }

float block_scale(float amax, Fp8Format f, bool pow2) {
  if (!(amax > 0.0f) || !std::isfinite(amax)) return 1.0f;
  const float s = pow2 ? std::ldexp(1.0f, static_cast<int>(std::floor(std::log2(amax))) - emax(f))
                       : amax / fp8_max(f);
  // A block of f32 subnormals would get a scale of 0 (or itself subnormal):
  // scale 1 casts its values to zero codes, as for an all-zero block.
  return std::isnormal(s) ? s : 1.0f;
}

}  // namespace

Fp8Blocks fp8_quantize_blocks(const float* x, int64_t rows, int64_t cols, int64_t ld,
                              int64_t block_rows, int64_t block_cols, Fp8Format f,
                              bool pow2_scales) {
  PX_CHECK(rows >= 0 && cols >= 0 && block_rows >= 1 && block_cols >= 1 && ld >= cols,
           "fp8 blocks: {} x {} (ld {}) in {} x {} blocks", rows, cols, ld, block_rows,
           block_cols);
  Fp8Blocks q;
  q.rows = rows, q.cols = cols, q.block_rows = block_rows, q.block_cols = block_cols;
  q.format = f;
  q.codes.resize(static_cast<size_t>(rows * cols));
  const int64_t gr = (rows + block_rows - 1) / block_rows, gc = q.block_grid_cols();
  q.scales.assign(static_cast<size_t>(gr * gc), 1.0f);
#pragma omp parallel for collapse(2) schedule(static) if (rows * cols > 65536)
  for (int64_t br = 0; br < gr; ++br)
    for (int64_t bc = 0; bc < gc; ++bc) {
      const int64_t r0 = br * block_rows, r1 = std::min(rows, r0 + block_rows);
      const int64_t c0 = bc * block_cols, c1 = std::min(cols, c0 + block_cols);
      float amax = 0.0f;
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t c = c0; c < c1; ++c) amax = std::max(amax, std::fabs(x[r * ld + c]));
      const float s = block_scale(amax, f, pow2_scales);
      q.scales[static_cast<size_t>(br * gc + bc)] = s;
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t c = c0; c < c1; ++c)
          q.codes[static_cast<size_t>(r * cols + c)] = f32_to_fp8(x[r * ld + c] / s, f);
    }
  return q;
}

void fp8_dequantize_blocks(const Fp8Blocks& q, float* out) {
  for (int64_t r = 0; r < q.rows; ++r)
    for (int64_t c = 0; c < q.cols; ++c)
      out[r * q.cols + c] =
          fp8_to_f32(q.codes[static_cast<size_t>(r * q.cols + c)], q.format) * q.scale(r, c);
}

void fp8_block_gemm_nt(const Fp8Blocks& A, const Fp8Blocks& B, float* C) {
  PX_CHECK(A.cols == B.cols && A.block_cols == B.block_cols,
           "fp8 block GEMM: A has K {} in blocks of {}, B K {} in blocks of {}", A.cols,
           A.block_cols, B.cols, B.block_cols);
  const int64_t M = A.rows, N = B.rows, K = A.cols, kb = A.block_cols;
  std::fill(C, C + M * N, 0.0f);
  if (M == 0 || N == 0) return;
  // The codes' values (exact in f32), one K block of each operand at a time.
  std::vector<float> a(static_cast<size_t>(M * kb)), b(static_cast<size_t>(N * kb)),
      part(static_cast<size_t>(M * N));
  for (int64_t k0 = 0; k0 < K; k0 += kb) {
    const int64_t w = std::min(kb, K - k0);
    for (int64_t m = 0; m < M; ++m)
      for (int64_t k = 0; k < w; ++k)
        a[m * w + k] = fp8_to_f32(A.codes[static_cast<size_t>(m * K + k0 + k)], A.format);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t k = 0; k < w; ++k)
        b[n * w + k] = fp8_to_f32(B.codes[static_cast<size_t>(n * K + k0 + k)], B.format);
    gemm<float>(false, true, M, N, w, 1.0f, a.data(), w, b.data(), w, 0.0f, part.data(), N);
    // Promotion: the block's partial sum times both scales, into the f32 total.
    for (int64_t m = 0; m < M; ++m) {
      const float sa = A.scale(m, k0);
      for (int64_t n = 0; n < N; ++n) C[m * N + n] += part[m * N + n] * (sa * B.scale(n, k0));
    }
  }
}

}  // namespace parallm::cpu
