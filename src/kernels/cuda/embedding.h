// Embedding lookup and its gradient on the GPU over a vocab shard holding rows
// [row_begin, row_begin + rows) of the full table, the twins of
// kernels/cpu/embedding.h: tokens outside the shard give zeros (forward) and
// no gradient (backward). Backward is deterministic: the tokens are stably
// sorted, then each distinct row adds its dout rows in token order, which is
// exactly the CPU's summation order (fp32 results match it bit for bit).
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace parallm::cuda {

// out (N, C) = table[tok - row_begin] (or += when accumulate).
template <class T>
void embedding_forward(T* out, const int32_t* tokens, const T* table, int64_t N, int64_t C,
                       int64_t row_begin, int64_t rows, bool accumulate, cudaStream_t s);

// dtable[tok - row_begin] += dout (N, C), fp32 table gradient. Takes its
// sort scratch from the stream-ordered allocator (cudaMallocAsync).
template <class T>
void embedding_backward(float* dtable, const int32_t* tokens, const T* dout, int64_t N, int64_t C,
                        int64_t row_begin, int64_t rows, cudaStream_t s);
// The same with caller-owned scratch of embedding_backward_scratch_bytes(N) bytes.
size_t embedding_backward_scratch_bytes(int64_t N);
template <class T>
void embedding_backward(float* dtable, const int32_t* tokens, const T* dout, int64_t N, int64_t C,
                        int64_t row_begin, int64_t rows, void* scratch, cudaStream_t s);

}  // namespace parallm::cuda
