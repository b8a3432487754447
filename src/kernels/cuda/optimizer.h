// Optimizer steps and gradient arithmetic on flat fp32 device buffers, the
// twins of kernels/cpu/optimizer.h (same parameter structs, same formulas:
// bias corrections in double on the host, per-element update in fp32).
// sum_squares is deterministic: fixed blocks (a function of n alone) sum in
// double, one block adds the partials in order. Clipping reads the norm from
// device memory, so global-norm clipping needs no host round trip.
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "kernels/cpu/optimizer.h"

namespace parallm::cuda {

// torch.optim.AdamW; p_bf16 (may be null) also receives the updated p in bf16.
void adamw_step(float* p, const float* g, float* m, float* v, int64_t n, const cpu::AdamWParams& h,
                __nv_bfloat16* p_bf16, cudaStream_t s);
// torch.optim.Adam (h.weight_decay is L2 on the gradient).
void adam_step(float* p, const float* g, float* m, float* v, int64_t n, const cpu::AdamWParams& h,
               cudaStream_t s);
// Adam or AdamW (decoupled) over a whole flat buffer in one launch, element i
// taking h.weight_decay when decay_mask[i / 16] is nonzero and no decay
// otherwise: the ParameterSet pads every tensor to 16 elements, so each
// 16-element block belongs to one parameter. Per element the same formulas
// as adamw_step / adam_step; n must be a multiple of 16.
void adam_step_masked(float* p, const float* g, float* m, float* v, int64_t n,
                      const cpu::AdamWParams& h, bool decoupled, const uint8_t* decay_mask,
                      __nv_bfloat16* p_bf16, cudaStream_t s);
// torch.optim.SGD, dampening 0 (buf unused when momentum is 0).
void sgd_step(float* p, const float* g, float* buf, int64_t n, const cpu::SgdParams& h,
              cudaStream_t s);

// *out (device double) = sum of x^2 (overwrites); scratch of sum_squares_scratch_bytes(n).
size_t sum_squares_scratch_bytes(int64_t n);
void sum_squares(double* out, const float* x, int64_t n, void* scratch, cudaStream_t s);
void scale_inplace(float* x, int64_t n, float s_, cudaStream_t s);
// Sets *flag (device int) to 1 if any element is Inf or NaN; never clears it.
void has_nonfinite(int* flag, const float* x, int64_t n, cudaStream_t s);
// x *= max_norm / (sqrt(*sumsq) + 1e-6) when that is below 1 (max_norm <= 0
// disables), as optim/grad_clip.cpp's clip_grad_norm; *sumsq is a device double.
void clip_by_norm(float* x, int64_t n, const double* sumsq, float max_norm, cudaStream_t s);

}  // namespace parallm::cuda
