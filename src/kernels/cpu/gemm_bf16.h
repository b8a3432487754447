// Reduced-precision GEMM for mixed precision: C (f32) = op(A) op(B) + beta C
// with A and B held as 16-bit floats (bf16 or IEEE f16 bits). Products of two
// 16-bit values are exact in f32 and sums run in f32, so the result depends
// on the inputs' rounding and on the summation order only. bf16 runs on
// oneDNN's matmul primitive (cached per shape) when the CPU has AVX512-BF16;
// otherwise, and always for f16 (no AVX512-FP16 on the project's CPU), the
// inputs are widened to f32 exactly and dnnl_sgemm runs ("emulated": same
// rounding of the inputs, another summation order). docs/mixed_precision.md.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "tensor/allocator.h"

namespace parallm::cpu {

enum class LowpType { BF16, F16 };

// dst = 16-bit bits of src, round to nearest even; f16 overflows to +-Inf
// beyond 65504 as f16 hardware does, NaN stays NaN.
void round_to_lowp(uint16_t* dst, const float* src, int64_t n, LowpType t);
// dst = src widened to f32 (exact).
void widen_lowp(float* dst, const uint16_t* src, int64_t n, LowpType t);
// In place: x = widen(round(x)), the value an f32 takes when stored in 16 bits.
void round_inplace(float* x, int64_t n, LowpType t);

// True when the effective ISA (cpu_isa.h: the machine's, under
// PARALLM_MAX_CPU_ISA) includes AVX512-BF16 (or newer: AMX).
bool cpu_has_avx512_bf16();

class LowpGemm {
 public:
  // allow_native = false forces the emulated path (tests compare the two).
  explicit LowpGemm(LowpType t, bool allow_native = true);
  ~LowpGemm();
  LowpGemm(const LowpGemm&) = delete;
  LowpGemm& operator=(const LowpGemm&) = delete;

  LowpType type() const { return type_; }
  bool native() const { return native_; }
  // One line for the job's banner, e.g. "oneDNN bf16 matmul (brg:avx512_core_bf16)".
  std::string backend() const;

  // C (M, N) = op(A) op(B) + beta C, row-major; op(A) is (M, K), op(B) is
  // (K, N); beta is 0 or 1. Emulated scratch comes from `scratch` (workspace).
  void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const uint16_t* A,
            int64_t lda, const uint16_t* B, int64_t ldb, float beta, float* C, int64_t ldc,
            Allocator& scratch) const;

 private:
  struct Cache;  // oneDNN engine, stream and primitives by shape
  LowpType type_;
  bool native_;
  std::unique_ptr<Cache> cache_;
};

}  // namespace parallm::cpu
