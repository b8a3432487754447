// Newton-Schulz orthogonalisation for Muon: maps a matrix G = U S V^T to
// approximately U V^T (singular values pushed into about [0.7, 1.2]) with
// the quintic iteration of Keller Jordan's Muon reference
// (zeropower_via_newtonschulz5): X = G / (||G||_F + 1e-7), transposed so it
// is wide; then `steps` times A = X X^T, B = b A + c A A, X = a X + B X with
// (a, b, c) = (3.4445, -4.7750, 2.0315). fp32 here (the reference runs bf16).
#pragma once
#include <cstdint>

#include "tensor/allocator.h"

namespace parallm {

inline constexpr double kNsA = 3.4445, kNsB = -4.7750, kNsC = 2.0315;

// x: (rows, cols) row-major, replaced by its orthogonalised form. Scratch
// buffers are tagged workspace.
void newton_schulz_orthogonalise(float* x, int64_t rows, int64_t cols, int steps, Allocator& alloc);

}  // namespace parallm
