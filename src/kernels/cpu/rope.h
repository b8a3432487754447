// Rotary position embedding in the "rotate half" form used by HF LLaMA:
// within each head of dim D, element i pairs with i + D/2 (i < D/2), rotated by
// angle pos * inv_freq[i]; plain RoPE has inv_freq[i] = theta^(-2i/D), scaled
// variants pass their own table (model/layers/rope_frequencies.h). Positions
// are explicit so context/sequence parallel shards can pass their global positions.
#pragma once
#include <cstdint>

namespace parallm::cpu {

// x: (B, T, H, D), rotated in place; positions: (T) global positions (shared
// over B); inv_freq: (D/2) the inverse frequency of each pair.
template <class T>
void rope_forward(T* x, const int64_t* positions, int64_t B, int64_t T_, int64_t H, int64_t D,
                  const double* inv_freq);
// The transpose of the rotation (rotation by -angle), applied in place to dx.
template <class T>
void rope_backward(T* dx, const int64_t* positions, int64_t B, int64_t T_, int64_t H, int64_t D,
                   const double* inv_freq);

// Plain RoPE: the table theta^(-2i/D).
template <class T>
void rope_forward(T* x, const int64_t* positions, int64_t B, int64_t T_, int64_t H, int64_t D,
                  double theta);
template <class T>
void rope_backward(T* dx, const int64_t* positions, int64_t B, int64_t T_, int64_t H, int64_t D,
                   double theta);

}  // namespace parallm::cpu
