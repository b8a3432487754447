// The online-softmax merge of partial attention results on the GPU: the
// semantics of cpu::attention_merge (kernels/cpu/attention_merge.h), weights
// in double: out = out * e^(lse - new) + part * e^(part_lse - new),
// new = log(e^lse + e^part_lse); a row with part_lse = -inf is left alone,
// a running row with lse = -inf is replaced. Each row has one writing warp.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

namespace parallm::cuda {

// part_out (B, len, Hq * D) and part_lse (B, Hq, len): one chunk pair's
// result; merged into query chunk i of out (B, nq * len, Hq * D) and lse
// (B, Hq, nq * len). All device pointers; asynchronous on s.
void attention_merge(float* out, float* lse, const float* part_out, const float* part_lse,
                     int64_t B, int64_t Hq, int64_t D, int64_t nq, int64_t len, int64_t i,
                     cudaStream_t s);

}  // namespace parallm::cuda
