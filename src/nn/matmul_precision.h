// The matmul side of mixed precision (--precision bf16|fp16): fp32 master
// weights stay in the ParameterSet; each weight's 16-bit copy is made once
// per optimizer step (lazily, at its first GEMM after invalidate()), and
// activations and the gradients flowing backward are rounded to 16 bits at
// the GEMM's input. Outputs and every accumulation (dW, dx) stay fp32.
// Layers call the free functions below; with no MatmulPrecision in the
// LayerContext (fp32) they are exactly ops::gemm / ops::linear_*.
#pragma once
#include <span>
#include <vector>

#include "nn/layer_context.h"
#include "ops/lowp.h"

namespace parallm {

class MatmulPrecision {
 public:
  // precision: BF16 or FP16. allow_native = false forces the emulated GEMM.
  MatmulPrecision(Precision precision, const ParameterSet& ps, Allocator& alloc,
                  bool allow_native = true);
  Precision precision() const { return precision_; }
  const ops::LowpGemm& gemm() const { return gemm_; }
  ops::LowpType type() const { return gemm_.type(); }
  // The 16-bit copy of w's current values (made now if this step has none).
  const uint16_t* weight(const ParameterSet& ps, ParamRef w);
  // After every change of the master weights (optimizer step, load).
  void invalidate() { std::fill(valid_.begin(), valid_.end(), 0); }

 private:
  Precision precision_;
  ops::LowpGemm gemm_;
  Tensor copy_;                   // 16-bit, tag Parameter: each f32 weight, 64-byte aligned
  std::vector<int64_t> offsets_;  // per parameter: where in copy_ (-1: an NF4 weight, none)
  std::vector<char> valid_;       // per parameter: copy_ holds this step's values
};

// C (M, N) = op(A) op(W) + beta C, A an f32 activation, W a weight (param w,
// whose current f32 values are at wvals); beta 0 or 1.
void matmul_weight(const LayerContext& c, bool trans_a, bool trans_w, int64_t M, int64_t N,
                   int64_t K, const float* A, int64_t lda, ParamRef w, const float* wvals,
                   int64_t ldw, float beta, float* C, int64_t ldc);
// C (M, N) = op(A) op(B) + beta C, both f32 activations (weight gradients).
void matmul_act(const LayerContext& c, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K,
                const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
                int64_t ldc);

// ops::linear_forward / linear_backward for parameter w (the signatures of
// kernels/cpu/matmul.h plus the context and the weight's ref).
void linear_forward(const LayerContext& c, float* out, const float* inp, ParamRef w,
                    const float* bias, int64_t N, int64_t IC, int64_t OC);
void linear_backward(const LayerContext& c, float* dinp, float* dweight, float* dbias,
                     const float* dout, const float* inp, ParamRef w, int64_t N, int64_t IC,
                     int64_t OC);

// One of several linears of the same input: out (N, OC) = inp W^T + bias.
struct LinearPart {
  ParamRef w;
  const float* bias;  // or null
  int64_t OC;
  float* out;
};

// linear_forward for each part, bit for bit; at a few rows (decode) as one
// skinny GEMM pass over all the weights (one parallel region, and under
// bf16/fp16 the input rounded once), else one call per part.
void linear_forward_parts(const LayerContext& c, const float* inp, int64_t N, int64_t IC,
                          std::span<const LinearPart> parts);

}  // namespace parallm
