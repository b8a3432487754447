// CudaBackend (cuda_backend.h): the MoE layer's row moves and mixed
// precision's 16-bit rounding and GEMM (cuBLASLt, 16-bit operands, f32
// result and accumulation).
#include "kernels/cuda/blas.h"
#include "kernels/cuda/lowp.h"
#include "kernels/cuda/moe_rows.h"
#include "ops/cuda/cuda_backend.h"

namespace parallm::ops {

void CudaBackend::moe_gather(float* send, const float* x, const cpu::AssignedRows& r,
                             int64_t C) const {
  cuda::moe_gather(send, x, r, C, stream_);
}
void CudaBackend::moe_combine(float* out, const float* y, const float* gate,
                              const cpu::AssignedRows& r, int64_t C) const {
  cuda::moe_combine(out, y, gate, r, C, stream_);
}
void CudaBackend::moe_combine_backward(float* dy, float* dgate, const float* dout, const float* y,
                                       const float* gate, const cpu::AssignedRows& r,
                                       int64_t C) const {
  cuda::moe_combine_backward(dy, dgate, dout, y, gate, r, C, stream_);
}
void CudaBackend::moe_gather_backward(float* dx, const float* dsend, const cpu::AssignedRows& r,
                                      int64_t C) const {
  cuda::moe_gather_backward(dx, dsend, r, C, stream_);
}

void CudaBackend::round_to_lowp(uint16_t* dst, const float* src, int64_t n,
                                cpu::LowpType t) const {
  cuda::round_to_lowp(dst, src, n, t, stream_);
}
void CudaBackend::round_inplace(float* x, int64_t n, cpu::LowpType t) const {
  cuda::round_inplace(x, n, t, stream_);
}
void CudaBackend::lowp_gemm(cpu::LowpType t, bool trans_a, bool trans_b, int64_t M, int64_t N,
                            int64_t K, const uint16_t* A, int64_t lda, const uint16_t* B,
                            int64_t ldb, float beta, float* C, int64_t ldc) const {
  cuda::gemm_lowp(*blas_, t, trans_a, trans_b, M, N, K, A, lda, B, ldb, beta, C, ldc, stream_);
}

}  // namespace parallm::ops
