#include "optim/newton_schulz.h"

#include <cmath>
#include <utility>

#include "ops/matmul.h"
#include "ops/optimizer.h"
#include "tensor/tensor.h"

namespace parallm {

void newton_schulz_orthogonalise(float* x, int64_t rows, int64_t cols, int steps,
                                 Allocator& alloc) {
  // Work on the wide orientation (r <= c) so X X^T is the small Gram matrix.
  const bool tall = rows > cols;
  const int64_t r = tall ? cols : rows, c = tall ? rows : cols;
  Tensor xa = Tensor::zeros(alloc, {r, c}, DType::F32, MemTag::Workspace);
  Tensor xb = Tensor::zeros(alloc, {r, c}, DType::F32, MemTag::Workspace);
  Tensor a = Tensor::zeros(alloc, {r, r}, DType::F32, MemTag::Workspace);
  Tensor b = Tensor::zeros(alloc, {r, r}, DType::F32, MemTag::Workspace);
  // Host loops below read and write x, X and Y: this is host code so far,
  // on the host stream.
  const ops::Stream& st = ops::Stream::host();
  float* X = xa.data<float>();
  float* Y = xb.data<float>();
  const float inv =
      static_cast<float>(1.0 / (std::sqrt(ops::sum_squares(st, x, rows * cols)) + 1e-7));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      const float e = x[i * cols + j] * inv;
      if (tall)
        X[j * c + i] = e;
      else
        X[i * c + j] = e;
    }
  float* A = a.data<float>();
  float* B = b.data<float>();
  for (int s = 0; s < steps; ++s) {
    ops::gemm(st, false, true, r, r, c, 1.0f, X, c, X, c, 0.0f, A, r);  // A = X X^T
    for (int64_t k = 0; k < r * r; ++k) B[k] = static_cast<float>(kNsB) * A[k];
    ops::gemm(st, false, false, r, r, r, static_cast<float>(kNsC), A, r, A, r, 1.0f, B, r);
    for (int64_t k = 0; k < r * c; ++k) Y[k] = X[k];
    // Y = a X + B X
    ops::gemm(st, false, false, r, c, r, 1.0f, B, r, X, c, static_cast<float>(kNsA), Y, c);
    std::swap(X, Y);
  }
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) x[i * cols + j] = tall ? X[j * c + i] : X[i * c + j];
}

}  // namespace parallm
