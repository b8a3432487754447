// Embedding kernels (embedding.h). Forward is a flat map over N * C. Backward
// sorts (token, position) pairs with a stable radix sort, so equal tokens keep
// their order; one block per run of equal tokens then walks the run in order
// and adds the dout rows to its table row, every channel by its own thread.
// No atomics: the sums have one fixed order, independent of scheduling.
#include <cub/device/device_radix_sort.cuh>

#include "kernels/cuda/arg_check.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/embedding.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/reduce.cuh"

namespace parallm::cuda {
namespace {

constexpr int kRunThreads = 256;
constexpr size_t kAlign = 256;

size_t align_up(size_t b) { return (b + kAlign - 1) / kAlign * kAlign; }

template <class T>
__global__ void embedding_forward_kernel(T* out, const int32_t* tokens, const T* table, int64_t N,
                                         int64_t C, int64_t row_begin, int64_t rows,
                                         bool accumulate) {
  const int64_t total = N * C;
  for (int64_t i = grid_index(); i < total; i += grid_stride()) {
    const int64_t n = i / C, c = i - n * C;
    const int64_t tok = tokens[n];
    const bool in = tok >= row_begin && tok < row_begin + rows;
    const float v = in ? to_float(table[(tok - row_begin) * C + c]) : 0.f;
    if (accumulate) {
      if (in) out[i] = from_float<T>(to_float(out[i]) + v);
    } else {
      out[i] = from_float<T>(v);
    }
  }
}

__global__ void iota_kernel(int32_t* idx, int64_t N) {
  for (int64_t i = grid_index(); i < N; i += grid_stride()) idx[i] = static_cast<int32_t>(i);
}

// Block b looks at sorted position b; only the first position of each run of
// equal tokens does work: it adds the run's dout rows, in original token order.
template <class T>
__global__ void embedding_runs_kernel(float* dtable, const int32_t* sorted_tok,
                                      const int32_t* sorted_pos, const T* dout, int64_t N,
                                      int64_t C, int64_t row_begin, int64_t rows) {
  const int64_t b = blockIdx.x;
  if (b >= N) return;
  const int64_t tok = sorted_tok[b];
  if (b > 0 && sorted_tok[b - 1] == tok) return;  // not the start of a run
  if (tok < row_begin || tok >= row_begin + rows) return;
  int64_t end = b + 1;
  while (end < N && sorted_tok[end] == tok) ++end;
  float* d = dtable + (tok - row_begin) * C;
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x) {
    float acc = d[c];
    for (int64_t k = b; k < end; ++k)
      acc += to_float(dout[static_cast<int64_t>(sorted_pos[k]) * C + c]);
    d[c] = acc;
  }
}

size_t sort_temp_bytes(int64_t N) {
  size_t bytes = 0;
  PX_CUDA(cub::DeviceRadixSort::SortPairs(
      nullptr, bytes, static_cast<const int32_t*>(nullptr), static_cast<int32_t*>(nullptr),
      static_cast<const int32_t*>(nullptr), static_cast<int32_t*>(nullptr), N));
  return bytes;
}

}  // namespace

template <class T>
void embedding_forward(T* out, const int32_t* tokens, const T* table, int64_t N, int64_t C,
                       int64_t row_begin, int64_t rows, bool accumulate, cudaStream_t s) {
  require_arg(N >= 0, "cuda::embedding_forward", "N >= 0, N", N);
  require_arg(C >= 1, "cuda::embedding_forward", "C >= 1, C", C);
  if (N == 0) return;
  embedding_forward_kernel<T><<<elementwise_blocks(N * C), kElementwiseThreads, 0, s>>>(
      out, tokens, table, N, C, row_begin, rows, accumulate);
  PX_CUDA_LAUNCH("embedding_forward");
}

size_t embedding_backward_scratch_bytes(int64_t N) {
  const size_t ints = align_up(static_cast<size_t>(N) * sizeof(int32_t));
  return 3 * ints + align_up(sort_temp_bytes(N));
}

template <class T>
void embedding_backward(float* dtable, const int32_t* tokens, const T* dout, int64_t N, int64_t C,
                        int64_t row_begin, int64_t rows, void* scratch, cudaStream_t s) {
  const char* name = "cuda::embedding_backward";
  require_arg(N >= 0 && N < (int64_t{1} << 31), name, "0 <= N < 2^31, N", N);
  require_arg(C >= 1, name, "C >= 1, C", C);
  if (N == 0) return;
  require_arg(scratch != nullptr, name, "scratch of embedding_backward_scratch_bytes(N), N", N);
  const size_t ints = align_up(static_cast<size_t>(N) * sizeof(int32_t));
  char* base = static_cast<char*>(scratch);
  int32_t* pos_in = reinterpret_cast<int32_t*>(base);
  int32_t* pos_out = reinterpret_cast<int32_t*>(base + ints);
  int32_t* tok_out = reinterpret_cast<int32_t*>(base + 2 * ints);
  void* temp = base + 3 * ints;
  size_t temp_bytes = sort_temp_bytes(N);
  iota_kernel<<<elementwise_blocks(N), kElementwiseThreads, 0, s>>>(pos_in, N);
  PX_CUDA_LAUNCH("embedding_backward iota");
  // All 32 key bits: negative tokens sort first and are skipped as out of shard.
  PX_CUDA(cub::DeviceRadixSort::SortPairs(temp, temp_bytes, tokens, tok_out, pos_in, pos_out, N, 0,
                                          32, s));
  embedding_runs_kernel<T><<<static_cast<unsigned>(N), kRunThreads, 0, s>>>(
      dtable, tok_out, pos_out, dout, N, C, row_begin, rows);
  PX_CUDA_LAUNCH("embedding_backward");
}

template <class T>
void embedding_backward(float* dtable, const int32_t* tokens, const T* dout, int64_t N, int64_t C,
                        int64_t row_begin, int64_t rows, cudaStream_t s) {
  if (N <= 0) {
    embedding_backward<T>(dtable, tokens, dout, N, C, row_begin, rows, nullptr, s);
    return;
  }
  void* scratch = nullptr;
  PX_CUDA(cudaMallocAsync(&scratch, embedding_backward_scratch_bytes(N), s));
  embedding_backward<T>(dtable, tokens, dout, N, C, row_begin, rows, scratch, s);
  PX_CUDA(cudaFreeAsync(scratch, s));
}

#define PX_INSTANTIATE(T)                                                                          \
  template void embedding_forward<T>(T*, const int32_t*, const T*, int64_t, int64_t, int64_t,      \
                                     int64_t, bool, cudaStream_t);                                 \
  template void embedding_backward<T>(float*, const int32_t*, const T*, int64_t, int64_t, int64_t, \
                                      int64_t, cudaStream_t);                                      \
  template void embedding_backward<T>(float*, const int32_t*, const T*, int64_t, int64_t, int64_t, \
                                      int64_t, void*, cudaStream_t);
PX_INSTANTIATE(float)
PX_INSTANTIATE(__nv_bfloat16)
#undef PX_INSTANTIATE

}  // namespace parallm::cuda
