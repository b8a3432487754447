// The linear layer over a GGUF-block weight (quant_weight.h), for inference.
// A few rows (decode: kQuantDotMaxRows or fewer) take integer dot products:
// each activation row is quantised to 8 bits per block of 32 (an f32 scale,
// round to nearest), each weight block is multiplied with it in int32
// (AVX512-VNNI vpdpbusd, else AVX2 vpmaddubsw + vpmaddwd, else scalar) and
// scaled by both blocks' scales into f32 sums; the weight is read once for
// all rows, split over the threads by output rows. More rows (prompts) take
// tiles of W dequantised into the dense GEMM (16-bit when a LowpGemm is
// given, the activations then rounded once; f32 otherwise).
#pragma once
#include <cstdint>

#include "kernels/cpu/gemm_bf16.h"
#include "kernels/cpu/quant_weight.h"
#include "tensor/allocator.h"

namespace parallm::cpu {

inline constexpr int64_t kQuantDotMaxRows = 8;

// The instruction paths of the dot products, each chosen at run time.
enum class QuantDotPath { kScalar, kAvx2, kVnni };
// The best this build and CPU allow under PARALLM_MAX_CPU_ISA.
QuantDotPath quant_dot_path();
const char* quant_dot_path_name(QuantDotPath p);
// Whether path p can run here (built in and allowed).
bool quant_dot_path_available(QuantDotPath p);

// out (M, N) = inp (M, K) W^T + bias (N); bias may be null; lowp: the
// prompt path's 16-bit GEMM (null: f32).
void quant_linear_forward(Allocator& a, float* out, const float* inp, const QuantWeight& w,
                          const float* bias, int64_t M, const LowpGemm* lowp = nullptr);

// The dot-product kernel alone on path p (any M), out (M, N) = inp W^T: for
// tests of each path and the benchmark.
void quant_dot_rows(QuantDotPath p, Allocator& a, float* out, const float* inp,
                    const QuantWeight& w, int64_t M);

}  // namespace parallm::cpu
