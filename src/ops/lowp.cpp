#include "ops/lowp.h"

#include "ops/device_backend.h"
#include "ops/kernel_scratch.h"
#include "ops/skinny_parts.h"

namespace parallm::ops {

void round_to_lowp(const Stream& s, uint16_t* dst, const float* src, int64_t n, LowpType t) {
  if (const DeviceBackend* b = s.backend()) return b->round_to_lowp(dst, src, n, t);
  require_cpu_kernels(s, "round_to_lowp");
  cpu::round_to_lowp(s.operand(dst), s.operand(src), n, t);
}

void round_inplace(const Stream& s, float* x, int64_t n, LowpType t) {
  if (const DeviceBackend* b = s.backend()) return b->round_inplace(x, n, t);
  require_cpu_kernels(s, "round_inplace");
  cpu::round_inplace(s.operand(x), n, t);
}

void lowp_gemm(const Stream& s, const LowpGemm& g, bool trans_a, bool trans_b, int64_t M, int64_t N,
               int64_t K, const uint16_t* A, int64_t lda, const uint16_t* B, int64_t ldb,
               float beta, float* C, int64_t ldc, Allocator& scratch) {
  if (const DeviceBackend* b = s.backend())
    return b->lowp_gemm(g.type(), trans_a, trans_b, M, N, K, A, lda, B, ldb, beta, C, ldc);
  require_cpu_kernels(s, "lowp_gemm");
  KernelScratch ks(s, scratch);
  g.gemm(trans_a, trans_b, M, N, K, s.operand(A), lda, s.operand(B), ldb, beta, s.operand(C), ldc,
         ks.get());
}

void skinny_gemm_nt_lowp(const Stream& s, int64_t M, int64_t N, int64_t K, float alpha,
                         const float* A, int64_t lda, const uint16_t* W, LowpType t, int64_t ldw,
                         float beta, float* C, int64_t ldc) {
  require_cpu_kernels(s, "skinny_gemm_nt_lowp");
  cpu::skinny_gemm_nt_lowp(M, N, K, alpha, s.operand(A), lda, s.operand(W), t, ldw, beta,
                           s.operand(C), ldc);
}

void skinny_gemm_nt_parts_lowp(const Stream& s, int64_t M, int64_t K, const float* A, int64_t lda,
                               const SkinnyPart* parts, int64_t n_parts, LowpType t) {
  require_cpu_kernels(s, "skinny_gemm_nt_parts_lowp");
  const HostSkinnyParts host(s, parts, n_parts);
  cpu::skinny_gemm_nt_parts_lowp(M, K, s.operand(A), lda, host.parts(), n_parts, t);
}

}  // namespace parallm::ops
