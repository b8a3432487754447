// LayerNorm / RMSNorm kernels (norm.h). Forward and the input gradient use
// one warp per row (fp32 sums in a fixed shuffle order, as the CPU's two-pass
// compensated variance). The weight/bias gradients run in two deterministic
// stages: (column tile, row chunk) blocks write double partial sums to
// scratch, then one warp per column adds the chunks in a fixed order.
#include <algorithm>

#include "kernels/cuda/arg_check.h"
#include "kernels/cuda/column_sum.cuh"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/norm.h"
#include "kernels/cuda/pack.cuh"
#include "kernels/cuda/reduce.cuh"

namespace parallm::cuda {
namespace {

constexpr int kRowsPerBlock = 4;  // warps (rows) per block in the row kernels
constexpr int kColTile = 32;      // columns per weight-gradient block
constexpr int kRowLanes = 8;      // row lanes per weight-gradient block
constexpr int64_t kMaxChunks = 128;

// Row chunks of the weight-gradient partials: a function of N alone, so the
// summation order never depends on the device.
int64_t grad_chunks(int64_t N) { return std::max<int64_t>(1, std::min(kMaxChunks, (N + 63) / 64)); }
int64_t rows_per_chunk(int64_t N) {
  const int64_t c = grad_chunks(N);
  return (N + c - 1) / c;
}

unsigned row_blocks(int64_t N) {
  return static_cast<unsigned>((N + kRowsPerBlock - 1) / kRowsPerBlock);
}

template <class T>
__global__ void layernorm_forward_kernel(T* out, float* mean, float* rstd, const T* inp,
                                         const T* weight, const T* bias, int64_t N, int64_t C,
                                         float eps) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + (threadIdx.x >> 5);
  const int lane = threadIdx.x & 31;
  if (row >= N) return;  // whole warp leaves together; no block barriers below
  const T* x = inp + row * C;
  const float fc = static_cast<float>(C);
  float s = 0.f;
  for (int64_t i = lane; i < C; i += 32) s += to_float(x[i]);
  const float m = warp_sum(s) / fc;
  // Two-pass variance minus the rounding error of the mean (sum of d is 0 exactly).
  float d1 = 0.f, d2 = 0.f;
  for (int64_t i = lane; i < C; i += 32) {
    const float d = to_float(x[i]) - m;
    d1 += d;
    d2 += d * d;
  }
  d1 = warp_sum(d1);
  d2 = warp_sum(d2);
  const float var = fmaxf(0.f, (d2 - d1 * d1 / fc) / fc);
  const float r = 1.f / sqrtf(var + eps);
  T* o = out + row * C;
  for (int64_t i = lane; i < C; i += 32) {
    float v = (to_float(x[i]) - m) * r * to_float(weight[i]);
    if (bias != nullptr) v += to_float(bias[i]);
    o[i] = from_float<T>(v);
  }
  if (lane == 0) {
    if (mean != nullptr) mean[row] = m;
    if (rstd != nullptr) rstd[row] = r;
  }
}

template <class T>
__global__ void layernorm_dinp_kernel(T* dinp, const T* dout, const T* inp, const T* weight,
                                      const float* mean, const float* rstd, int64_t N, int64_t C) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + (threadIdx.x >> 5);
  const int lane = threadIdx.x & 31;
  if (row >= N) return;
  const T* x = inp + row * C;
  const T* d = dout + row * C;
  const float m = mean[row], r = rstd[row], fc = static_cast<float>(C);
  float sg = 0.f, sgx = 0.f;  // sums of g = dout * w and of g * xhat
  for (int64_t i = lane; i < C; i += 32) {
    const float g = to_float(d[i]) * to_float(weight[i]);
    sg += g;
    sgx += g * ((to_float(x[i]) - m) * r);
  }
  const float a = warp_sum(sg) / fc, b = warp_sum(sgx) / fc;
  T* dx = dinp + row * C;
  for (int64_t i = lane; i < C; i += 32) {
    const float xhat = (to_float(x[i]) - m) * r;
    const float g = to_float(d[i]) * to_float(weight[i]);
    dx[i] = from_float<T>(to_float(dx[i]) + (g - a - xhat * b) * r);
  }
}

// The same on 16-byte packs (C % W == 0, rows 16-byte aligned): each lane
// takes packs lane, lane + 32, ...; the scalar kernel above measured 175 GB/s
// on an H200 (GPT-2 rows, bf16), a third of a millisecond per call.
template <class T, int W>
__global__ void layernorm_dinp_packed_kernel(T* __restrict__ dinp, const T* __restrict__ dout,
                                             const T* __restrict__ inp,
                                             const T* __restrict__ weight,
                                             const float* __restrict__ mean,
                                             const float* __restrict__ rstd, int64_t N,
                                             int64_t C) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + (threadIdx.x >> 5);
  const int lane = threadIdx.x & 31;
  if (row >= N) return;
  const T* x = inp + row * C;
  const T* d = dout + row * C;
  const float m = mean[row], r = rstd[row], fc = static_cast<float>(C);
  const int64_t packs = C / W;
  float sg = 0.f, sgx = 0.f;
  for (int64_t p = lane; p < packs; p += 32) {
    const Pack<T, W> xp = load_pack<T, W>(x + p * W), dp = load_pack<T, W>(d + p * W),
                     wp = load_pack<T, W>(weight + p * W);
#pragma unroll
    for (int k = 0; k < W; ++k) {
      const float g = to_float(dp.v[k]) * to_float(wp.v[k]);
      sg += g;
      sgx += g * ((to_float(xp.v[k]) - m) * r);
    }
  }
  const float a = warp_sum(sg) / fc, b = warp_sum(sgx) / fc;
  T* dx = dinp + row * C;
  for (int64_t p = lane; p < packs; p += 32) {
    const Pack<T, W> xp = load_pack<T, W>(x + p * W), dp = load_pack<T, W>(d + p * W),
                     wp = load_pack<T, W>(weight + p * W);
    Pack<T, W> op = load_pack<T, W>(dx + p * W);
#pragma unroll
    for (int k = 0; k < W; ++k) {
      const float xhat = (to_float(xp.v[k]) - m) * r;
      const float g = to_float(dp.v[k]) * to_float(wp.v[k]);
      op.v[k] = from_float<T>(to_float(op.v[k]) + (g - a - xhat * b) * r);
    }
    store_pack<T, W>(dx + p * W, op);
  }
}

// one: 1 under adds_one, else 0 (weight + 0 is weight: the plain norm keeps its bits).
template <class T>
__global__ void rmsnorm_forward_kernel(T* out, float* rstd, const T* inp, const T* weight,
                                       int64_t N, int64_t C, float eps, float one) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + (threadIdx.x >> 5);
  const int lane = threadIdx.x & 31;
  if (row >= N) return;
  const T* x = inp + row * C;
  float ss = 0.f;
  for (int64_t i = lane; i < C; i += 32) {
    const float v = to_float(x[i]);
    ss += v * v;
  }
  const float r = 1.f / sqrtf(warp_sum(ss) / static_cast<float>(C) + eps);
  T* o = out + row * C;
  for (int64_t i = lane; i < C; i += 32)
    o[i] = from_float<T>(to_float(x[i]) * r * (to_float(weight[i]) + one));
  if (lane == 0 && rstd != nullptr) rstd[row] = r;
}

template <class T>
__global__ void rmsnorm_dinp_kernel(T* dinp, const T* dout, const T* inp, const T* weight,
                                    const float* rstd, int64_t N, int64_t C, float one) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + (threadIdx.x >> 5);
  const int lane = threadIdx.x & 31;
  if (row >= N) return;
  const T* x = inp + row * C;
  const T* d = dout + row * C;
  const float r = rstd[row];
  float sgx = 0.f;
  for (int64_t i = lane; i < C; i += 32)
    sgx += to_float(d[i]) * (to_float(weight[i]) + one) * to_float(x[i]);
  // d rstd / d x_i = -rstd^3 x_i / C
  const float c = r * r * warp_sum(sgx) / static_cast<float>(C);
  T* dx = dinp + row * C;
  for (int64_t i = lane; i < C; i += 32) {
    const float g = to_float(d[i]) * (to_float(weight[i]) + one);
    dx[i] = from_float<T>(to_float(dx[i]) + r * (g - to_float(x[i]) * c));
  }
}

// The same on 16-byte packs (as layernorm_dinp_packed_kernel).
template <class T, int W>
__global__ void rmsnorm_dinp_packed_kernel(T* __restrict__ dinp, const T* __restrict__ dout,
                                           const T* __restrict__ inp, const T* __restrict__ weight,
                                           const float* __restrict__ rstd, int64_t N, int64_t C,
                                           float one) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + (threadIdx.x >> 5);
  const int lane = threadIdx.x & 31;
  if (row >= N) return;
  const T* x = inp + row * C;
  const T* d = dout + row * C;
  const float r = rstd[row];
  const int64_t packs = C / W;
  float sgx = 0.f;
  for (int64_t p = lane; p < packs; p += 32) {
    const Pack<T, W> xp = load_pack<T, W>(x + p * W), dp = load_pack<T, W>(d + p * W),
                     wp = load_pack<T, W>(weight + p * W);
#pragma unroll
    for (int k = 0; k < W; ++k)
      sgx += to_float(dp.v[k]) * (to_float(wp.v[k]) + one) * to_float(xp.v[k]);
  }
  const float c = r * r * warp_sum(sgx) / static_cast<float>(C);
  T* dx = dinp + row * C;
  for (int64_t p = lane; p < packs; p += 32) {
    const Pack<T, W> xp = load_pack<T, W>(x + p * W), dp = load_pack<T, W>(d + p * W),
                     wp = load_pack<T, W>(weight + p * W);
    Pack<T, W> op = load_pack<T, W>(dx + p * W);
#pragma unroll
    for (int k = 0; k < W; ++k) {
      const float g = to_float(dp.v[k]) * (to_float(wp.v[k]) + one);
      op.v[k] = from_float<T>(to_float(op.v[k]) + r * (g - to_float(xp.v[k]) * c));
    }
    store_pack<T, W>(dx + p * W, op);
  }
}

// part_w[chunk, c] = sum over the chunk's rows of dout * xhat, part_b[chunk, c]
// = sum of dout (part_b may be null), xhat = (x - shift[n]) * rstd[n]
// (shift null: 0). Block (kColTile, kRowLanes); grid (column tiles, chunks).
template <class T>
__global__ void norm_weight_partials_kernel(double* part_w, double* part_b, const T* dout,
                                            const T* inp, const float* shift, const float* rstd,
                                            int64_t N, int64_t C, int64_t chunk_rows) {
  __shared__ double sw[kRowLanes][kColTile];
  __shared__ double sb[kRowLanes][kColTile];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int64_t c = static_cast<int64_t>(blockIdx.x) * kColTile + tx;
  const int64_t r0 = static_cast<int64_t>(blockIdx.y) * chunk_rows;
  const int64_t r1 = r0 + chunk_rows < N ? r0 + chunk_rows : N;
  double aw = 0.0, ab = 0.0;
  if (c < C) {
    for (int64_t n = r0 + ty; n < r1; n += kRowLanes) {
      const float d = to_float(dout[n * C + c]);
      const float m = shift != nullptr ? shift[n] : 0.f;
      aw += static_cast<double>(d * ((to_float(inp[n * C + c]) - m) * rstd[n]));
      ab += static_cast<double>(d);
    }
  }
  sw[ty][tx] = aw;
  sb[ty][tx] = ab;
  __syncthreads();
  if (ty == 0 && c < C) {
    double tw = 0.0, tb = 0.0;
    for (int k = 0; k < kRowLanes; ++k) {
      tw += sw[k][tx];
      tb += sb[k][tx];
    }
    const int64_t at = static_cast<int64_t>(blockIdx.y) * C + c;
    part_w[at] = tw;
    if (part_b != nullptr) part_b[at] = tb;
  }
}

template <class T>
void weight_grads(float* dweight, float* dbias, const T* dout, const T* inp, const float* shift,
                  const float* rstd, int64_t N, int64_t C, void* scratch, const char* name,
                  cudaStream_t s) {
  if (dweight == nullptr && dbias == nullptr) return;
  require_arg(scratch != nullptr, name, "scratch of *_backward_scratch_bytes(N, C) bytes, size", 0);
  const int64_t chunks = grad_chunks(N);
  double* part_w = static_cast<double*>(scratch);
  double* part_b = dbias != nullptr ? part_w + chunks * C : nullptr;
  dim3 grid(static_cast<unsigned>((C + kColTile - 1) / kColTile), static_cast<unsigned>(chunks));
  dim3 block(kColTile, kRowLanes);
  norm_weight_partials_kernel<T>
      <<<grid, block, 0, s>>>(part_w, part_b, dout, inp, shift, rstd, N, C, rows_per_chunk(N));
  PX_CUDA_LAUNCH("norm_weight_partials");
  // dweight[c] += sum_k part_w[k, c], dbias likewise (column_sum.cuh).
  if (dweight != nullptr) {
    column_sum_kernel<double>
        <<<column_sum_blocks(C), kColumnSumWarps * 32, 0, s>>>(dweight, part_w, chunks, C);
    PX_CUDA_LAUNCH("norm_weight_finish");
  }
  if (dbias != nullptr) {
    column_sum_kernel<double>
        <<<column_sum_blocks(C), kColumnSumWarps * 32, 0, s>>>(dbias, part_b, chunks, C);
    PX_CUDA_LAUNCH("norm_bias_finish");
  }
}

// Rows of C elements start 16-byte aligned and hold whole packs.
template <class T>
bool packable(const T* dinp, const T* dout, const T* inp, const T* weight, int64_t C) {
  return C % kPackWidth<T> == 0 && is_aligned16(dinp) && is_aligned16(dout) &&
         is_aligned16(inp) && is_aligned16(weight);
}

void check_shape(const char* name, int64_t N, int64_t C) {
  require_arg(N >= 0, name, "N >= 0, N", N);
  require_arg(C >= 1, name, "C >= 1, C", C);
  require_arg(N / kRowsPerBlock < (int64_t{1} << 31), name, "N < 2^33, N", N);
}

}  // namespace

template <class T>
void layernorm_forward(T* out, float* mean, float* rstd, const T* inp, const T* weight,
                       const T* bias, int64_t N, int64_t C, float eps, cudaStream_t s) {
  check_shape("cuda::layernorm_forward", N, C);
  if (N == 0) return;
  layernorm_forward_kernel<T>
      <<<row_blocks(N), kRowsPerBlock * 32, 0, s>>>(out, mean, rstd, inp, weight, bias, N, C, eps);
  PX_CUDA_LAUNCH("layernorm_forward");
}

size_t layernorm_backward_scratch_bytes(int64_t N, int64_t C) {
  return static_cast<size_t>(2 * grad_chunks(N) * C) * sizeof(double);
}

template <class T>
void layernorm_backward(T* dinp, float* dweight, float* dbias, const T* dout, const T* inp,
                        const T* weight, const float* mean, const float* rstd, int64_t N, int64_t C,
                        void* scratch, cudaStream_t s) {
  check_shape("cuda::layernorm_backward", N, C);
  if (N == 0) return;
  constexpr int W = kPackWidth<T>;
  if (dinp != nullptr && packable<T>(dinp, dout, inp, weight, C)) {
    layernorm_dinp_packed_kernel<T, W>
        <<<row_blocks(N), kRowsPerBlock * 32, 0, s>>>(dinp, dout, inp, weight, mean, rstd, N, C);
    PX_CUDA_LAUNCH("layernorm_backward (packed)");
  } else if (dinp != nullptr) {
    layernorm_dinp_kernel<T>
        <<<row_blocks(N), kRowsPerBlock * 32, 0, s>>>(dinp, dout, inp, weight, mean, rstd, N, C);
    PX_CUDA_LAUNCH("layernorm_backward");
  }
  weight_grads<T>(dweight, dbias, dout, inp, mean, rstd, N, C, scratch, "cuda::layernorm_backward",
                  s);
}

template <class T>
void rmsnorm_forward(T* out, float* rstd, const T* inp, const T* weight, int64_t N, int64_t C,
                     float eps, cudaStream_t s, bool adds_one) {
  check_shape("cuda::rmsnorm_forward", N, C);
  if (N == 0) return;
  rmsnorm_forward_kernel<T><<<row_blocks(N), kRowsPerBlock * 32, 0, s>>>(
      out, rstd, inp, weight, N, C, eps, adds_one ? 1.f : 0.f);
  PX_CUDA_LAUNCH("rmsnorm_forward");
}

size_t rmsnorm_backward_scratch_bytes(int64_t N, int64_t C) {
  return static_cast<size_t>(grad_chunks(N) * C) * sizeof(double);
}

template <class T>
void rmsnorm_backward(T* dinp, float* dweight, const T* dout, const T* inp, const T* weight,
                      const float* rstd, int64_t N, int64_t C, void* scratch, cudaStream_t s,
                      bool adds_one) {
  check_shape("cuda::rmsnorm_backward", N, C);
  if (N == 0) return;
  constexpr int W = kPackWidth<T>;
  const float one = adds_one ? 1.f : 0.f;
  if (dinp != nullptr && packable<T>(dinp, dout, inp, weight, C)) {
    rmsnorm_dinp_packed_kernel<T, W>
        <<<row_blocks(N), kRowsPerBlock * 32, 0, s>>>(dinp, dout, inp, weight, rstd, N, C, one);
    PX_CUDA_LAUNCH("rmsnorm_backward (packed)");
  } else if (dinp != nullptr) {
    rmsnorm_dinp_kernel<T>
        <<<row_blocks(N), kRowsPerBlock * 32, 0, s>>>(dinp, dout, inp, weight, rstd, N, C, one);
    PX_CUDA_LAUNCH("rmsnorm_backward");
  }
  // d out / d weight = inp * rstd with or without adds_one: the same sums.
  weight_grads<T>(dweight, nullptr, dout, inp, nullptr, rstd, N, C, scratch,
                  "cuda::rmsnorm_backward", s);
}

#define PX_INSTANTIATE(T)                                                                       \
  template void layernorm_forward<T>(T*, float*, float*, const T*, const T*, const T*, int64_t, \
                                     int64_t, float, cudaStream_t);                             \
  template void layernorm_backward<T>(T*, float*, float*, const T*, const T*, const T*,         \
                                      const float*, const float*, int64_t, int64_t, void*,      \
                                      cudaStream_t);                                            \
  template void rmsnorm_forward<T>(T*, float*, const T*, const T*, int64_t, int64_t, float,     \
                                   cudaStream_t, bool);                                         \
  template void rmsnorm_backward<T>(T*, float*, const T*, const T*, const T*, const float*,     \
                                    int64_t, int64_t, void*, cudaStream_t, bool);
PX_INSTANTIATE(float)
PX_INSTANTIATE(__nv_bfloat16)
#undef PX_INSTANTIATE

}  // namespace parallm::cuda
