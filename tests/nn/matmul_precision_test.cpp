// matmul_weight under bf16 and fp16 for the decode shape (a few rows times a
// transposed weight, which reads the weight's 16-bit copy through the skinny
// kernel) against a double-precision product of the 16-bit-rounded operands,
// and against the 16-bit GEMM path that more rows take: the same products,
// so both agree within f32 summation error.
#include "nn/matmul_precision.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "base/rng.h"
#include "kernels/cpu/skinny_gemm.h"
#include "tensor/half.h"

namespace parallm {
namespace {

float round16(float x, Precision p) {
  return p == Precision::BF16 ? bf16_to_f32(f32_to_bf16(x)) : f16_to_f32(f32_to_f16(x));
}

TEST(MatmulWeight, DecodeRowsMatchRoundedProductAndTheGemmPath) {
  constexpr int64_t N = 1000, K = 200, kMany = cpu::kSkinnyMaxRows + 3;
  for (Precision p : {Precision::BF16, Precision::FP16}) {
    Allocator alloc;
    ParameterSet ps;
    const ParamRef w = ps.add({.name = "w", .shape = {N, K}, .global_shape = {N, K}});
    ps.allocate(alloc);
    ps.init_random(3);
    MatmulPrecision mp(p, ps, alloc);
    std::vector<int64_t> pos(kMany, 0);
    LayerContext c{alloc, ps, 1, kMany, pos.data()};
    c.matmul = &mp;
    std::vector<float> a(kMany * K);
    const uint64_t key = stream_key(5, "a");
    for (size_t i = 0; i < a.size(); ++i) a[i] = 2.0f * uniform_at(key, i) - 1.0f;
    // All rows at once: more than the skinny kernel takes, so the 16-bit GEMM
    // (without AVX512-BF16: W widened in blocks of rows, here more than one).
    std::vector<float> many(kMany * N);
    matmul_weight(c, false, true, kMany, N, K, a.data(), K, w, ps.value(w), K, 0.0f, many.data(),
                  N);
    const float* wv = ps.value(w);
    const double eps = std::numeric_limits<float>::epsilon();
    for (int64_t rows : {int64_t{1}, int64_t{3}, cpu::kSkinnyMaxRows}) {
      std::vector<float> few(rows * N, 7.0f);  // beta 1: accumulates onto 7
      matmul_weight(c, false, true, rows, N, K, a.data(), K, w, wv, K, 1.0f, few.data(), N);
      for (int64_t m = 0; m < rows; ++m)
        for (int64_t n = 0; n < N; ++n) {
          double ref = 7.0, mag = 7.0;
          for (int64_t k = 0; k < K; ++k) {
            const double prod = double(round16(a[m * K + k], p)) * round16(wv[n * K + k], p);
            ref += prod;
            mag += std::abs(prod);
          }
          const double tol = 2.0 * (K + 1) * eps * mag;
          ASSERT_NEAR(few[m * N + n], ref, tol) << "rows " << rows << " (" << m << ", " << n << ")";
          ASSERT_NEAR(few[m * N + n] - 7.0, many[m * N + n], tol) << "vs the GEMM path";
        }
    }
  }
}

}  // namespace
}  // namespace parallm
