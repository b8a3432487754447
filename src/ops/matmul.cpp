#include "ops/matmul.h"

#include "kernels/cpu/matmul.h"
#include "ops/device_backend.h"
#include "ops/skinny_parts.h"

namespace parallm::ops {

void gemm(const Stream& s, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
          const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
          int64_t ldc) {
  if (const DeviceBackend* b = s.backend()) return b->gemm(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  require_cpu_kernels(s, "gemm");
  cpu::gemm<float>(trans_a, trans_b, M, N, K, alpha, s.operand(A), lda, s.operand(B), ldb, beta,
                   s.operand(C), ldc);
}

void linear_forward(const Stream& s, float* out, const float* inp, const float* weight,
                    const float* bias, int64_t N, int64_t IC, int64_t OC) {
  if (const DeviceBackend* b = s.backend()) return b->linear_forward(out, inp, weight, bias, N, IC, OC);
  require_cpu_kernels(s, "linear_forward");
  cpu::linear_forward<float>(s.operand(out), s.operand(inp), s.operand(weight), s.operand(bias), N,
                             IC, OC);
}

void linear_backward(const Stream& s, float* dinp, float* dweight, float* dbias, const float* dout,
                     const float* inp, const float* weight, int64_t N, int64_t IC, int64_t OC) {
  if (const DeviceBackend* b = s.backend()) return b->linear_backward(dinp, dweight, dbias, dout, inp, weight, N, IC, OC);
  require_cpu_kernels(s, "linear_backward");
  cpu::linear_backward<float>(s.operand(dinp), s.operand(dweight), s.operand(dbias),
                              s.operand(dout), s.operand(inp), s.operand(weight), N, IC, OC);
}

void skinny_gemm_nt_parts(const Stream& s, int64_t M, int64_t K, const float* A, int64_t lda,
                          const SkinnyPart* parts, int64_t n_parts) {
  require_cpu_kernels(s, "skinny_gemm_nt_parts");
  const HostSkinnyParts host(s, parts, n_parts);
  cpu::skinny_gemm_nt_parts(M, K, s.operand(A), lda, host.parts(), n_parts);
}

}  // namespace parallm::ops
