// Private to kernels/cuda/blas*.cpp: the row-major cuBLASLt GEMM behind
// blas.h's typed entry points, with the element types named at run time, so
// the 16-bit mixed GEMM (blas_lowp.cpp) shares blas.cpp's heuristic cache,
// workspace and K = 0 handling. Row-major C (M, N) is run as the column-major
// C^T = op(B)^T op(A)^T: operands swapped, each transpose flag kept.
#pragma once
#include <cuda_runtime_api.h>
#include <library_types.h>

#include <cstdint>

namespace parallm::cuda {

class Blas;

// C (M, N) = alpha op(A) op(B) + beta C, row-major, A and B of cuBLASLt type
// ab, C of type cd (CUDA_R_32F or CUDA_R_16BF), fp32 accumulation (TF32 only
// for fp32 inputs on a Blas that allows it). Throws when cuBLASLt has no
// algorithm for the problem.
void row_major_gemm(Blas& blas, cudaDataType ab, cudaDataType cd, bool trans_a, bool trans_b,
                    int64_t M, int64_t N, int64_t K, float alpha, const void* A, int64_t lda,
                    const void* B, int64_t ldb, float beta, void* C, int64_t ldc, cudaStream_t s);

}  // namespace parallm::cuda
