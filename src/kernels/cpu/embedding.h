// Embedding lookup over a (possibly vocab-sharded) table holding rows
// [row_begin, row_begin + rows) of the full table. Tokens outside the shard
// produce zeros (forward) and no gradient (backward), so shards sum to the
// full lookup.
#pragma once
#include <cstdint>

namespace parallm::cpu {

// out (N, C) = table[tok - row_begin] (or += when accumulate).
template <class T>
void embedding_forward(T* out, const int32_t* tokens, const T* table, int64_t N, int64_t C,
                       int64_t row_begin, int64_t rows, bool accumulate);
// dtable[tok - row_begin] += dout (N, C). Deterministic (no atomics-order dependence).
template <class T>
void embedding_backward(T* dtable, const int32_t* tokens, const T* dout, int64_t N, int64_t C,
                        int64_t row_begin, int64_t rows);

}  // namespace parallm::cpu
