// The online-softmax merge of partial attention results (context
// parallelism's chunk pairs, parallel/context/chunk_attention.h): a pair's
// output rows and log-sum-exp merged into a running result, as FlashAttention
// merges key blocks: out = out * e^(lse - new) + part * e^(part_lse - new),
// new = log(e^lse + e^part_lse), in double; a row the pair saw no key of
// (part_lse = -inf) is left alone, a running row with none yet is replaced.
#pragma once
#include <cstdint>

namespace parallm::cpu {

// part_out (B, len, Hq * D) and part_lse (B, Hq, len): one chunk pair's
// result; merged into query chunk i of out (B, nq * len, Hq * D) and lse
// (B, Hq, nq * len).
void attention_merge(float* out, float* lse, const float* part_out, const float* part_lse,
                     int64_t B, int64_t Hq, int64_t D, int64_t nq, int64_t len, int64_t i);

}  // namespace parallm::cpu
