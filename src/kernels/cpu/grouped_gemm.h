// Grouped linear layers: G independent linears (one per expert) over
// consecutive row groups of one buffer, in one call (docs/moe.md). Group g
// owns rows [offsets[g], offsets[g+1]) and weight g (OC, IC) at
// weight + g*OC*IC, bias g (OC) at bias + g*OC. Each group's product is one
// whole GEMM; groups with a large share of the rows, or enough rows for
// every thread, run with all threads, the others side by side in one
// parallel region, so many small or empty groups do not serialise the work.
// Backward accumulates, like every kernel here. Each group's result is that
// of one linear call, on all threads or (side by side) on one. The 16-bit
// variants (mixed precision) take operands already rounded to bf16/fp16 and
// run each group's GEMM on cpu::LowpGemm, f32 out and f32 accumulation.
#pragma once
#include <cstdint>

#include "kernels/cpu/gemm_bf16.h"

namespace parallm::cpu {

// out (M, OC) = inp (M, IC) W_g^T + b_g for the rows of each group.
void grouped_linear_forward(float* out, const float* inp, const float* weight, const float* bias,
                            const int64_t* offsets, int64_t groups, int64_t IC, int64_t OC);

// dinp (M, IC) += dout W_g; dweight_g += dout_g^T inp_g; dbias_g += sum dout_g.
// dinp, dweight, dbias may each be null.
void grouped_linear_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                             const float* inp, const float* weight, const int64_t* offsets,
                             int64_t groups, int64_t IC, int64_t OC);

// The reference: a loop of per-group linear_forward calls (benchmarks, tests).
void grouped_linear_forward_loop(float* out, const float* inp, const float* weight,
                                 const float* bias, const int64_t* offsets, int64_t groups,
                                 int64_t IC, int64_t OC);

// Mixed precision (docs/mixed_precision.md, docs/moe.md): the same linears
// with 16-bit inputs and weights (bits of gemm.type(), rounded by the
// caller: an activation once per call, a weight once per step), f32 outputs,
// biases and accumulation. The groups run one after another, each GEMM with
// all threads: LowpGemm's primitive cache and the scratch allocator are not
// shared across threads.
// out (M, OC) = inp (M, IC) W_g^T + b_g.
void grouped_linear_forward_lowp(const LowpGemm& gemm, Allocator& scratch, float* out,
                                 const uint16_t* inp, const uint16_t* weight, const float* bias,
                                 const int64_t* offsets, int64_t groups, int64_t IC, int64_t OC);
// dinp (M, IC) += dout W_g; dweight_g += dout_g^T inp_g (dout, inp, weight
// 16-bit); dbias_g += the f32 row sum of dout_f32 (as the fp32 kernel sums
// it). dinp, dweight, dbias may each be null (inp may be null without dweight).
void grouped_linear_backward_lowp(const LowpGemm& gemm, Allocator& scratch, float* dinp,
                                  float* dweight, float* dbias, const uint16_t* dout,
                                  const float* dout_f32, const uint16_t* inp,
                                  const uint16_t* weight, const int64_t* offsets, int64_t groups,
                                  int64_t IC, int64_t OC);

}  // namespace parallm::cpu
