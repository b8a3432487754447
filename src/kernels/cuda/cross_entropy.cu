// Cross-entropy kernels (cross_entropy.h): one block per row, threads strided
// over the vocabulary, block reductions in a fixed tree. The fused kernel
// keeps an online (max in fp32, sum in double) pair per thread, merges the
// pairs across the block, then rewrites the row as the gradient; it moves
// the row as 16-byte packs (pack.cuh) from its first 16-byte boundary, the
// few elements before and after one at a time, so any V and any alignment
// take the fast path. Invariant: every exp argument is <= 0 (a max is
// subtracted), so nothing overflows; each element has one fixed thread, so
// results are reproducible run to run. log_sum_exp splits one long row over
// a few blocks (max, then sums of exponentials, then one warp adds them).
#include <algorithm>
#include <cmath>

#include "kernels/cuda/arg_check.h"
#include "kernels/cuda/cross_entropy.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/pack.cuh"
#include "kernels/cuda/reduce.cuh"

namespace parallm::cuda {
namespace {

constexpr int kRowThreads = 512;

__device__ __forceinline__ bool in_shard(int64_t t, int64_t V, int64_t vocab_begin) {
  return t >= 0 && t >= vocab_begin && t < vocab_begin + V;
}

template <class T>
__global__ void row_max_kernel(float* mx, const T* logits, int64_t V) {
  __shared__ float shm[33];
  const T* l = logits + static_cast<int64_t>(blockIdx.x) * V;
  float m = -INFINITY;
  for (int64_t j = threadIdx.x; j < V; j += blockDim.x) m = fmaxf(m, to_float(l[j]));
  m = block_max(m, shm);
  if (threadIdx.x == 0) mx[blockIdx.x] = m;
}

template <class T>
__global__ void row_sumexp_kernel(float* sumexp, const T* logits, const float* mx, int64_t V) {
  __shared__ double shm[33];
  const T* l = logits + static_cast<int64_t>(blockIdx.x) * V;
  const float m = mx[blockIdx.x];
  double acc = 0.0;
  for (int64_t j = threadIdx.x; j < V; j += blockDim.x)
    acc += static_cast<double>(expf(to_float(l[j]) - m));
  acc = block_sum(acc, shm);
  if (threadIdx.x == 0) sumexp[blockIdx.x] = static_cast<float>(acc);
}

template <class T>
__global__ void target_logit_kernel(float* tl, const T* logits, const int32_t* targets, int64_t n,
                                    int64_t V, int64_t vocab_begin) {
  for (int64_t i = grid_index(); i < n; i += grid_stride()) {
    const int64_t t = targets[i];
    tl[i] = in_shard(t, V, vocab_begin) ? to_float(logits[i * V + (t - vocab_begin)]) : 0.f;
  }
}

template <class T>
__global__ void softmax_grad_kernel(T* logits, const float* lse, const int32_t* targets,
                                    const float* row_scale, int64_t V, int64_t vocab_begin) {
  const int64_t i = blockIdx.x;
  T* l = logits + i * V;
  const int64_t t = targets[i];
  if (t < 0) {
    for (int64_t j = threadIdx.x; j < V; j += blockDim.x) l[j] = from_float<T>(0.f);
    return;
  }
  const float z = lse[i], scale = row_scale != nullptr ? row_scale[i] : 1.f;
  const int64_t tj = in_shard(t, V, vocab_begin) ? t - vocab_begin : -1;
  for (int64_t j = threadIdx.x; j < V; j += blockDim.x) {
    float v = expf(to_float(l[j]) - z) * scale;
    if (j == tj) v -= scale;
    l[j] = from_float<T>(v);
  }
}

// (m, s) <- merge of two online-softmax states: s sums exp(x - m). The max
// is fp32; the sum is kept in double, as the CPU sums exponentials, and the
// rare rescale factors are double exps, so only the fp32 terms carry error.
// m is never NaN (NaN fails every comparison and fmaxf drops it); a NaN
// logit lives on in s, also through the merge of two empty (-inf) states.
__device__ __forceinline__ void merge_state(float& m, double& s, float m2, double s2) {
  const float mm = fmaxf(m, m2);
  if (mm == -INFINITY) {  // both saw only -inf (and maybe NaN): no exp(-inf + inf)
    s += s2;
    return;
  }
  s = s * exp(static_cast<double>(m) - mm) + s2 * exp(static_cast<double>(m2) - mm);
  m = mm;
}

// One logit into the thread's online state.
__device__ __forceinline__ void online_add(float& m, double& s, float x) {
  if (x > m) {
    s = s * exp(static_cast<double>(m) - x) + 1.0;  // exp(-inf) = 0 on the first element
    m = x;
  } else if (!(x == -INFINITY && m == -INFINITY)) {  // that would be exp(nan); a NaN x stays
    s += static_cast<double>(expf(x - m));
  }
}

// A pack of logits into the thread's online state: one rescale to the
// pack's max, then every term against it.
template <class T, int W>
__device__ __forceinline__ void online_add_pack(float& m, double& s, const Pack<T, W>& x) {
  float pm = -INFINITY;
#pragma unroll
  for (int k = 0; k < W; ++k) pm = fmaxf(pm, to_float(x.v[k]));
  if (pm > m) {
    s *= exp(static_cast<double>(m) - pm);  // 0 while m is -inf (a NaN in s stays)
    m = pm;
  }
#pragma unroll
  for (int k = 0; k < W; ++k) {
    const float xk = to_float(x.v[k]);
    if (!(xk == -INFINITY && m == -INFINITY)) s += static_cast<double>(expf(xk - m));
  }
}

constexpr int kLossGradThreads = 256;

// Visits the V elements of row l with the block's threads: the elements
// before l's first 16-byte boundary and after its last whole pack one each
// (scalar(j), j < W: each takes at most W threads), the packs between two at
// a time per thread so that two 16-byte loads are in flight (packed(j0, x):
// the pack x starting at element j0). Each element goes to exactly one
// thread, the same one on every visit of the same row.
template <class T, class Scalar, class Packed>
__device__ __forceinline__ void for_row(const T* l, int64_t V, Scalar&& scalar, Packed&& packed) {
  constexpr int W = kPackWidth<T>;
  static_assert(kLossGradThreads >= W, "the head and tail need W threads");
  const int64_t head = aligned_head(l, V);
  const int64_t packs = (V - head) / W;
  const int64_t tail = head + packs * W;  // first element after the packs
  const int64_t tid = threadIdx.x, nt = blockDim.x;
  if (tid < head) scalar(tid);
  if (tid < V - tail) scalar(tail + tid);
  for (int64_t p = tid; p < packs; p += 2 * nt) {
    const int64_t j0 = head + p * W, j1 = j0 + nt * W;
    const bool second = p + nt < packs;
    const Pack<T, W> a = load_pack<T, W>(l + j0);
    Pack<T, W> b = a;
    if (second) b = load_pack<T, W>(l + j1);
    packed(j0, a);
    if (second) packed(j1, b);
  }
}

template <class T>
__global__ void __launch_bounds__(kLossGradThreads)
    loss_grad_kernel(T* logits, float* loss, const int32_t* targets, float row_scale, int64_t V) {
  constexpr int W = kPackWidth<T>;
  __shared__ float shm_m[32];
  __shared__ double shm_s[32];
  __shared__ float row_lse;
  const int64_t i = blockIdx.x;
  T* l = logits + i * V;
  const int64_t t = targets[i];
  if (t < 0) {  // uniform over the block: no barrier is skipped by part of it
    const T zero = from_float<T>(0.f);
    for_row(
        l, V, [&](int64_t j) { l[j] = zero; },
        [&](int64_t j0, const Pack<T, W>&) {
          Pack<T, W> z;
#pragma unroll
          for (int k = 0; k < W; ++k) z.v[k] = zero;
          store_pack<T, W>(l + j0, z);
        });
    if (threadIdx.x == 0) loss[i] = 0.f;
    return;
  }
  const int64_t tj = t < V ? t : -1;
  // Read the target logit before any thread of the block overwrites the row.
  const float target_logit = tj >= 0 ? to_float(l[tj]) : 0.f;
  float m = -INFINITY;
  double s = 0.0;
  for_row(
      l, V, [&](int64_t j) { online_add(m, s, to_float(l[j])); },
      [&](int64_t, const Pack<T, W>& x) { online_add_pack<T, W>(m, s, x); });
  for (int o = 16; o > 0; o >>= 1) {
    const float m2 = __shfl_xor_sync(0xffffffffu, m, o);
    const double s2 = __shfl_xor_sync(0xffffffffu, s, o);
    merge_state(m, s, m2, s2);
  }
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
  if (lane == 0) {
    shm_m[warp] = m;
    shm_s[warp] = s;
  }
  __syncthreads();
  if (warp == 0) {
    m = lane < nwarps ? shm_m[lane] : -INFINITY;
    s = lane < nwarps ? shm_s[lane] : 0.0;
    for (int o = 16; o > 0; o >>= 1) {
      const float m2 = __shfl_xor_sync(0xffffffffu, m, o);
      const double s2 = __shfl_xor_sync(0xffffffffu, s, o);
      merge_state(m, s, m2, s2);
    }
    if (lane == 0) row_lse = m + static_cast<float>(log(s));
  }
  __syncthreads();  // also: every read of the row above is done before the writes below
  const float lse = row_lse;
  if (threadIdx.x == 0) loss[i] = lse - target_logit;
  const auto grad = [&](float x, int64_t j) {
    const float p = expf(x - lse);
    return from_float<T>((j == tj ? p - 1.f : p) * row_scale);
  };
  for_row(
      l, V, [&](int64_t j) { l[j] = grad(to_float(l[j]), j); },
      [&](int64_t j0, const Pack<T, W>& x) {
        Pack<T, W> g;
#pragma unroll
        for (int k = 0; k < W; ++k) g.v[k] = grad(to_float(x.v[k]), j0 + k);
        store_pack<T, W>(l + j0, g);
      });
}

// log_sum_exp's split of one row: blocks of kLseThreads, at least
// kLseMinPerThread elements a thread, at most kLseMaxBlocks blocks; a
// function of n alone, so the summation order never depends on the device.
constexpr int kLseThreads = 512;
constexpr int64_t kLseMinPerThread = 16;
constexpr int64_t kLseMaxBlocks = 128;

int64_t lse_blocks(int64_t n) {
  const int64_t per_block = kLseThreads * kLseMinPerThread;
  return std::max<int64_t>(1, std::min(kLseMaxBlocks, (n + per_block - 1) / per_block));
}

// Block b's elements: [b * chunk, min(n, (b + 1) * chunk)).
__device__ __forceinline__ void lse_range(int64_t n, int64_t chunk, int64_t& j0, int64_t& j1) {
  j0 = static_cast<int64_t>(blockIdx.x) * chunk;
  j1 = j0 + chunk < n ? j0 + chunk : n;
}

// part_max[b] = the max of block b's elements (a float, held as a double).
__global__ void __launch_bounds__(kLseThreads)
    lse_max_kernel(double* part_max, const float* x, int64_t n, int64_t chunk) {
  __shared__ float shm[33];
  int64_t j0, j1;
  lse_range(n, chunk, j0, j1);
  float m = -INFINITY;
  for (int64_t j = j0 + threadIdx.x; j < j1; j += blockDim.x) m = fmaxf(m, x[j]);
  m = block_max(m, shm);
  if (threadIdx.x == 0) part_max[blockIdx.x] = m;
}

// The row max from the blocks' maxima; every block computes it the same way.
__device__ __forceinline__ float lse_row_max(const double* part_max, int64_t blocks, float* shm) {
  float m = -INFINITY;
  for (int64_t b = threadIdx.x; b < blocks; b += blockDim.x)
    m = fmaxf(m, static_cast<float>(part_max[b]));
  return block_max(m, shm);
}

// part_sum[b] = sum over block b's elements of exp(x - max), in double as the
// CPU (x - max in double too: the same argument the CPU's exp sees). An all
// -inf row gives exp(nan), NaN, as on the CPU.
__global__ void __launch_bounds__(kLseThreads)
    lse_sum_kernel(double* part_sum, const double* part_max, int64_t blocks, const float* x,
                   int64_t n, int64_t chunk) {
  __shared__ float shm_m[33];
  __shared__ double shm_s[33];
  const double m = lse_row_max(part_max, blocks, shm_m);
  int64_t j0, j1;
  lse_range(n, chunk, j0, j1);
  double acc = 0.0;
  for (int64_t j = j0 + threadIdx.x; j < j1; j += blockDim.x)
    acc += exp(static_cast<double>(x[j]) - m);
  acc = block_sum(acc, shm_s);
  if (threadIdx.x == 0) part_sum[blockIdx.x] = acc;
}

// *out = max + log(sum of the blocks' sums): one warp, fixed lane order.
__global__ void lse_finish_kernel(double* out, const double* part_max, const double* part_sum,
                                  int64_t blocks) {
  const int lane = threadIdx.x;
  float m = -INFINITY;
  double s = 0.0;
  for (int64_t b = lane; b < blocks; b += 32) {
    m = fmaxf(m, static_cast<float>(part_max[b]));
    s += part_sum[b];
  }
  m = warp_max(m);
  s = warp_sum(s);
  if (lane == 0) *out = static_cast<double>(m) + log(s);
}

void check_rows(const char* name, int64_t n, int64_t V) {
  require_arg(n >= 0 && n < (int64_t{1} << 31), name, "0 <= n < 2^31 rows, n", n);
  require_arg(V >= 1, name, "V >= 1, V", V);
}

}  // namespace

template <class T>
void ce_row_max(float* mx, const T* logits, int64_t n, int64_t V, cudaStream_t s) {
  check_rows("cuda::ce_row_max", n, V);
  if (n == 0) return;
  row_max_kernel<T><<<static_cast<unsigned>(n), kRowThreads, 0, s>>>(mx, logits, V);
  PX_CUDA_LAUNCH("ce_row_max");
}

template <class T>
void ce_row_sumexp(float* sumexp, const T* logits, const float* mx, int64_t n, int64_t V,
                   cudaStream_t s) {
  check_rows("cuda::ce_row_sumexp", n, V);
  if (n == 0) return;
  row_sumexp_kernel<T><<<static_cast<unsigned>(n), kRowThreads, 0, s>>>(sumexp, logits, mx, V);
  PX_CUDA_LAUNCH("ce_row_sumexp");
}

template <class T>
void ce_target_logit(float* tl, const T* logits, const int32_t* targets, int64_t n, int64_t V,
                     int64_t vocab_begin, cudaStream_t s) {
  check_rows("cuda::ce_target_logit", n, V);
  if (n == 0) return;
  target_logit_kernel<T><<<elementwise_blocks(n), kElementwiseThreads, 0, s>>>(tl, logits, targets,
                                                                               n, V, vocab_begin);
  PX_CUDA_LAUNCH("ce_target_logit");
}

template <class T>
void ce_softmax_grad_inplace(T* logits, const float* lse, const int32_t* targets,
                             const float* row_scale, int64_t n, int64_t V, int64_t vocab_begin,
                             cudaStream_t s) {
  check_rows("cuda::ce_softmax_grad_inplace", n, V);
  if (n == 0) return;
  softmax_grad_kernel<T><<<static_cast<unsigned>(n), kRowThreads, 0, s>>>(
      logits, lse, targets, row_scale, V, vocab_begin);
  PX_CUDA_LAUNCH("ce_softmax_grad_inplace");
}

template <class T>
void ce_loss_grad_inplace(T* logits, float* loss, const int32_t* targets, float row_scale,
                          int64_t n, int64_t V, cudaStream_t s) {
  check_rows("cuda::ce_loss_grad_inplace", n, V);
  if (n == 0) return;
  loss_grad_kernel<T>
      <<<static_cast<unsigned>(n), kLossGradThreads, 0, s>>>(logits, loss, targets, row_scale, V);
  PX_CUDA_LAUNCH("ce_loss_grad_inplace");
}

size_t log_sum_exp_scratch_bytes(int64_t n) {
  // Each block's max and sum, then the result.
  return static_cast<size_t>(2 * lse_blocks(n) + 1) * sizeof(double);
}

double log_sum_exp(const float* x, int64_t n, void* scratch, cudaStream_t s) {
  require_arg(n >= 0, "cuda::log_sum_exp", "n >= 0, n", n);
  if (n == 0) return -INFINITY;  // log(0), as the CPU
  require_arg(scratch != nullptr, "cuda::log_sum_exp",
              "scratch of log_sum_exp_scratch_bytes(n) bytes, size", 0);
  const int64_t blocks = lse_blocks(n), chunk = (n + blocks - 1) / blocks;
  double* part_max = static_cast<double*>(scratch);
  double* part_sum = part_max + blocks;
  double* result = part_sum + blocks;
  const auto grid = static_cast<unsigned>(blocks);
  lse_max_kernel<<<grid, kLseThreads, 0, s>>>(part_max, x, n, chunk);
  PX_CUDA_LAUNCH("log_sum_exp (max)");
  lse_sum_kernel<<<grid, kLseThreads, 0, s>>>(part_sum, part_max, blocks, x, n, chunk);
  PX_CUDA_LAUNCH("log_sum_exp (sum)");
  lse_finish_kernel<<<1, 32, 0, s>>>(result, part_max, part_sum, blocks);
  PX_CUDA_LAUNCH("log_sum_exp (finish)");
  double out = 0.0;
  PX_CUDA(cudaMemcpyAsync(&out, result, sizeof(double), cudaMemcpyDeviceToHost, s));
  PX_CUDA(cudaStreamSynchronize(s));  // out is pageable host memory: wait for the copy
  return out;
}

#define PX_INSTANTIATE(T)                                                                         \
  template void ce_row_max<T>(float*, const T*, int64_t, int64_t, cudaStream_t);                  \
  template void ce_row_sumexp<T>(float*, const T*, const float*, int64_t, int64_t, cudaStream_t); \
  template void ce_target_logit<T>(float*, const T*, const int32_t*, int64_t, int64_t, int64_t,   \
                                   cudaStream_t);                                                 \
  template void ce_softmax_grad_inplace<T>(T*, const float*, const int32_t*, const float*,        \
                                           int64_t, int64_t, int64_t, cudaStream_t);              \
  template void ce_loss_grad_inplace<T>(T*, float*, const int32_t*, float, int64_t, int64_t,      \
                                        cudaStream_t);
PX_INSTANTIATE(float)
PX_INSTANTIATE(__nv_bfloat16)
#undef PX_INSTANTIATE

}  // namespace parallm::cuda
