// Rotary position embedding in the "rotate half" form used by HF LLaMA:
// within each head of dim D, element i pairs with i + D/2 (i < D/2), rotated by
// angle pos * theta^(-2i/D). Positions are explicit so context/sequence
// parallel shards can pass their global positions.
#pragma once
#include <cstdint>

namespace parallm::cpu {

// x: (B, T, H, D), rotated in place; positions: (T) global positions (shared over B).
template <class T>
void rope_forward(T* x, const int64_t* positions, int64_t B, int64_t T_, int64_t H, int64_t D,
                  double theta);
// The transpose of the rotation (rotation by -angle), applied in place to dx.
template <class T>
void rope_backward(T* dx, const int64_t* positions, int64_t B, int64_t T_, int64_t H, int64_t D,
                   double theta);

}  // namespace parallm::cpu
