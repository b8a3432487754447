#include "kernels/cpu/nf4_gemm.h"

#include <algorithm>

#include "kernels/cpu/matmul.h"
#include "tensor/tensor.h"

namespace parallm::cpu {

int64_t nf4_tile_rows(int64_t K) {
  return std::max<int64_t>(1, kNf4TileBytes / (static_cast<int64_t>(sizeof(float)) * K));
}

void nf4_linear_forward(Allocator& a, float* out, const float* inp, const Nf4Weight& w,
                        const float* bias, int64_t M, std::optional<LowpType> round) {
  const int64_t N = w.rows(), K = w.cols(), tile = std::min(N, nf4_tile_rows(K));
  Tensor scratch = Tensor::zeros(a, Shape{tile, K}, DType::F32, MemTag::Workspace);
  float* Wt = scratch.data<float>();
  for (int64_t n0 = 0; n0 < N; n0 += tile) {
    const int64_t rows = std::min(tile, N - n0);
    w.dequantize_rows(n0, n0 + rows, Wt);
    if (round) round_inplace(Wt, rows * K, *round);
    // out[:, n0:n0+rows] = inp Wt^T: a column slice of out, row stride N.
    gemm<float>(false, true, M, rows, K, 1.0f, inp, K, Wt, K, 0.0f, out + n0, N);
  }
  if (bias)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) out[m * N + n] += bias[n];
}

void nf4_linear_backward_input(Allocator& a, float* dinp, const float* dout, const Nf4Weight& w,
                               int64_t M, std::optional<LowpType> round) {
  const int64_t N = w.rows(), K = w.cols(), tile = std::min(N, nf4_tile_rows(K));
  Tensor scratch = Tensor::zeros(a, Shape{tile, K}, DType::F32, MemTag::Workspace);
  float* Wt = scratch.data<float>();
  for (int64_t n0 = 0; n0 < N; n0 += tile) {
    const int64_t rows = std::min(tile, N - n0);
    w.dequantize_rows(n0, n0 + rows, Wt);
    if (round) round_inplace(Wt, rows * K, *round);
    // dinp += dout[:, n0:n0+rows] Wt: the tiles' contributions summed in row order.
    gemm<float>(false, false, M, K, rows, 1.0f, dout + n0, N, Wt, K, 1.0f, dinp, K);
  }
}

}  // namespace parallm::cpu
