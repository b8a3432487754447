// DeepSpeed-Ulysses' all-to-all: U ranks each hold a slice of the sequence
// with every head; one all-to-all gives each rank the whole (U-rank) sequence
// for H / U of the heads, attention runs on that, and the inverse
// all-to-all returns to sequence slices. Forward: seq_to_heads before the
// core and heads_to_seq after; backward: the same two in reverse order (the
// all-to-all is a permutation, so its backward is the inverse one).
// Layouts: seq (B, T, H, D) on each rank; heads (B, U*T, H/U, D) with the
// tokens of rank 0 first, then rank 1's, ... (each rank's own chunk order).
#pragma once
#include <cstdint>

#include "comm/communicator.h"
#include "tensor/allocator.h"

namespace parallm {

void ulysses_seq_to_heads(comm::Communicator& a2a, Allocator& alloc, float* heads, const float* seq,
                          int64_t B, int64_t T, int64_t H, int64_t D);
void ulysses_heads_to_seq(comm::Communicator& a2a, Allocator& alloc, float* seq, const float* heads,
                          int64_t B, int64_t T, int64_t H, int64_t D);

}  // namespace parallm
