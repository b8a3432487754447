// Token embedding lookup and its gradient, for a table that may hold only
// rows [row_begin, row_begin + rows) of the vocabulary (vocab-parallel).
// Kernels: kernels/cpu/embedding.h.
#pragma once
#include <cstdint>

#include "ops/stream.h"

namespace parallm::ops {

// out (N, C) = (or +=, accumulate) table[tokens[i] - row_begin] for the
// tokens this table holds; others give 0 (or nothing).
void embedding_forward(const Stream& s, float* out, const int32_t* tokens, const float* table,
                       int64_t N, int64_t C, int64_t row_begin, int64_t rows, bool accumulate);
// dtable[tokens[i] - row_begin] += dout[i] for the tokens this table holds.
void embedding_backward(const Stream& s, float* dtable, const int32_t* tokens, const float* dout,
                        int64_t N, int64_t C, int64_t row_begin, int64_t rows);

}  // namespace parallm::ops
