// The optimizers' element-wise updates and the reductions of gradient
// clipping and overflow checks. A reduction returns its value to the host
// (on a GPU it waits for the stream). Kernels: kernels/cpu/optimizer.h.
#pragma once
#include <cstdint>

#include "kernels/cpu/optimizer.h"
#include "ops/stream.h"

namespace parallm::ops {

using cpu::AdamWParams;
using cpu::SgdParams;

// AdamW (decoupled decay) and Adam (L2 in the gradient) on n elements.
void adamw_step(const Stream& s, float* p, const float* g, float* m, float* v, int64_t n,
                const AdamWParams& h);
void adam_step(const Stream& s, float* p, const float* g, float* m, float* v, int64_t n,
               const AdamWParams& h);
// buf may be null without momentum.
void sgd_step(const Stream& s, float* p, const float* g, float* buf, int64_t n, const SgdParams& h);

double sum_squares(const Stream& s, const float* x, int64_t n);  // in double
void scale_inplace(const Stream& s, float* x, int64_t n, float scale);
bool has_nonfinite(const Stream& s, const float* x, int64_t n);

}  // namespace parallm::ops
