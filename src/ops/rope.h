// Rotary position embedding ("rotate half", HF LLaMA), in place, with
// explicit global positions so sequence and context shards rotate by true
// position. Kernels: kernels/cpu/rope.h.
#pragma once
#include <cstdint>

#include "ops/stream.h"

namespace parallm::ops {

// x: (B, T, H, D) rotated in place; positions: (T); inv_freq: (D/2), a
// buffer of the stream's device like the others.
void rope_forward(const Stream& s, float* x, const int64_t* positions, int64_t B, int64_t T,
                  int64_t H, int64_t D, const double* inv_freq);
// The transpose of the rotation, applied in place to dx.
void rope_backward(const Stream& s, float* dx, const int64_t* positions, int64_t B, int64_t T,
                   int64_t H, int64_t D, const double* inv_freq);

// Plain RoPE: the table theta^(-2i/D).
void rope_forward(const Stream& s, float* x, const int64_t* positions, int64_t B, int64_t T,
                  int64_t H, int64_t D, double theta);
void rope_backward(const Stream& s, float* dx, const int64_t* positions, int64_t B, int64_t T,
                   int64_t H, int64_t D, double theta);

}  // namespace parallm::ops
