// Optimizer kernels (optimizer.h): grid-stride element maps with the CPU's
// exact per-element float formulas; scalar factors are computed on the host
// in double, as kernels/cpu/optimizer.cpp does.
#include <cmath>

#include "kernels/cuda/arg_check.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/optimizer.h"
#include "kernels/cuda/pack.cuh"
#include "kernels/cuda/reduce.cuh"

namespace parallm::cuda {
namespace {

constexpr int kSumThreads = 256;
constexpr int64_t kSumPerBlock = 8192;  // elements per partial at least
constexpr int64_t kMaxPartials = 1024;

struct AdamScalars {
  float decay, wd, b1, b2, one_b1, one_b2, step_size, bc2_sqrt, eps;
};

AdamScalars adam_scalars(const cpu::AdamWParams& h, double l2, double decoupled) {
  require_arg(h.step >= 1, "cuda adam step", "a 1-based step >= 1, step", h.step);
  const double bc1 = 1.0 - std::pow(h.beta1, static_cast<double>(h.step));
  const double bc2 = 1.0 - std::pow(h.beta2, static_cast<double>(h.step));
  AdamScalars a;
  a.decay = static_cast<float>(1.0 - h.lr * decoupled);
  a.wd = static_cast<float>(l2);
  a.b1 = static_cast<float>(h.beta1);
  a.b2 = static_cast<float>(h.beta2);
  a.one_b1 = static_cast<float>(1.0 - h.beta1);
  a.one_b2 = static_cast<float>(1.0 - h.beta2);
  a.step_size = static_cast<float>(h.lr / bc1);
  a.bc2_sqrt = static_cast<float>(std::sqrt(bc2));
  a.eps = static_cast<float>(h.eps);
  return a;
}

// The update of one element, shared by both Adam kernels.
__device__ __forceinline__ float adam_update(float pi, float g, float& m, float& v,
                                             const AdamScalars& a) {
  const float gi = g + a.wd * pi;
  const float mi = a.b1 * m + a.one_b1 * gi;
  const float vi = a.b2 * v + a.one_b2 * gi * gi;
  m = mi;
  v = vi;
  const float denom = sqrtf(vi) / a.bc2_sqrt + a.eps;
  return pi * a.decay - a.step_size * (mi / denom);
}

__global__ void adam_kernel(float* p, const float* g, float* m, float* v, int64_t n, AdamScalars a,
                            __nv_bfloat16* p_bf16) {
  for (int64_t i = grid_index(); i < n; i += grid_stride()) {
    const float pn = adam_update(p[i], g[i], m[i], v[i], a);
    p[i] = pn;
    if (p_bf16 != nullptr) p_bf16[i] = __float2bfloat16_rn(pn);
  }
}

__global__ void sgd_kernel(float* p, const float* g, float* buf, int64_t n, float lr, float wd,
                           float mu, bool momentum, bool nesterov) {
  for (int64_t i = grid_index(); i < n; i += grid_stride()) {
    const float d = g[i] + wd * p[i];
    if (!momentum) {
      p[i] -= lr * d;
      continue;
    }
    const float b = mu * buf[i] + d;
    buf[i] = b;
    p[i] -= lr * (nesterov ? d + mu * b : b);
  }
}

int64_t sum_partials(int64_t n) {
  const int64_t p = (n + kSumPerBlock - 1) / kSumPerBlock;
  return p < 1 ? 1 : (p > kMaxPartials ? kMaxPartials : p);
}

// part[b] = sum of x[i]^2 over i = b * kSumThreads + t + k * gridDim.x * kSumThreads.
__global__ void sum_squares_partial_kernel(double* part, const float* x, int64_t n) {
  __shared__ double shm[33];
  double acc = 0.0;
  for (int64_t i = grid_index(); i < n; i += grid_stride()) {
    const double v = static_cast<double>(x[i]);
    acc += v * v;
  }
  acc = block_sum(acc, shm);
  if (threadIdx.x == 0) part[blockIdx.x] = acc;
}

__global__ void sum_partials_kernel(double* out, const double* part, int64_t parts) {
  __shared__ double shm[33];
  double acc = 0.0;
  for (int64_t i = threadIdx.x; i < parts; i += blockDim.x) acc += part[i];
  acc = block_sum(acc, shm);
  if (threadIdx.x == 0) *out = acc;
}

__global__ void scale_kernel(float* x, int64_t n, float f) {
  for (int64_t i = grid_index(); i < n; i += grid_stride()) x[i] *= f;
}

__global__ void nonfinite_kernel(int* flag, const float* x, int64_t n) {
  bool bad = false;
  for (int64_t i = grid_index(); i < n; i += grid_stride())
    bad |= (__float_as_uint(x[i]) & 0x7f800000u) == 0x7f800000u;
  if (bad) *flag = 1;  // every writer stores the same value
}

__global__ void clip_kernel(float* x, int64_t n, const double* sumsq, double max_norm) {
  const double coef = max_norm / (sqrt(*sumsq) + 1e-6);
  if (!(coef < 1.0)) return;  // uniform: every thread reads the same norm
  const float f = static_cast<float>(coef);
  for (int64_t i = grid_index(); i < n; i += grid_stride()) x[i] *= f;
}

// Four elements per step (float4 loads: one parameter's 16-element blocks
// hold four of them), decay chosen per 16-element block.
__global__ void adam_masked_kernel(float* p, const float* g, float* m, float* v, int64_t n4,
                                   AdamScalars on, AdamScalars off, const uint8_t* mask,
                                   __nv_bfloat16* p_bf16) {
  for (int64_t i = grid_index(); i < n4; i += grid_stride()) {
    const AdamScalars& a = mask[i >> 2] ? on : off;
    float4 pp = reinterpret_cast<const float4*>(p)[i];
    const float4 gg = reinterpret_cast<const float4*>(g)[i];
    float4 mm = reinterpret_cast<const float4*>(m)[i];
    float4 vv = reinterpret_cast<const float4*>(v)[i];
    pp.x = adam_update(pp.x, gg.x, mm.x, vv.x, a);
    pp.y = adam_update(pp.y, gg.y, mm.y, vv.y, a);
    pp.z = adam_update(pp.z, gg.z, mm.z, vv.z, a);
    pp.w = adam_update(pp.w, gg.w, mm.w, vv.w, a);
    reinterpret_cast<float4*>(p)[i] = pp;
    reinterpret_cast<float4*>(m)[i] = mm;
    reinterpret_cast<float4*>(v)[i] = vv;
    if (p_bf16 != nullptr) {
      __nv_bfloat162 lo = __floats2bfloat162_rn(pp.x, pp.y), hi = __floats2bfloat162_rn(pp.z, pp.w);
      reinterpret_cast<__nv_bfloat162*>(p_bf16)[2 * i] = lo;
      reinterpret_cast<__nv_bfloat162*>(p_bf16)[2 * i + 1] = hi;
    }
  }
}

void launch_adam(float* p, const float* g, float* m, float* v, int64_t n, const AdamScalars& a,
                 __nv_bfloat16* p_bf16, cudaStream_t s) {
  if (n <= 0) return;
  adam_kernel<<<elementwise_blocks(n), kElementwiseThreads, 0, s>>>(p, g, m, v, n, a, p_bf16);
  PX_CUDA_LAUNCH("adam_step");
}

}  // namespace

void adam_step_masked(float* p, const float* g, float* m, float* v, int64_t n,
                      const cpu::AdamWParams& h, bool decoupled, const uint8_t* decay_mask,
                      __nv_bfloat16* p_bf16, cudaStream_t s) {
  require_arg(n % 16 == 0, "cuda::adam_step_masked", "n a multiple of 16, n", n);
  require_arg(is_aligned16(p) && is_aligned16(g) && is_aligned16(m) && is_aligned16(v),
              "cuda::adam_step_masked", "16-byte aligned buffers, n", n);
  if (n == 0) return;
  const double wd = h.weight_decay;
  const AdamScalars on = decoupled ? adam_scalars(h, 0.0, wd) : adam_scalars(h, wd, 0.0);
  const AdamScalars off = adam_scalars(h, 0.0, 0.0);
  const int64_t n4 = n / 4;
  adam_masked_kernel<<<elementwise_blocks(n4), kElementwiseThreads, 0, s>>>(p, g, m, v, n4, on, off,
                                                                          decay_mask, p_bf16);
  PX_CUDA_LAUNCH("adam_step_masked");
}

void adamw_step(float* p, const float* g, float* m, float* v, int64_t n, const cpu::AdamWParams& h,
                __nv_bfloat16* p_bf16, cudaStream_t s) {
  launch_adam(p, g, m, v, n, adam_scalars(h, 0.0, h.weight_decay), p_bf16, s);
}

void adam_step(float* p, const float* g, float* m, float* v, int64_t n, const cpu::AdamWParams& h,
               cudaStream_t s) {
  launch_adam(p, g, m, v, n, adam_scalars(h, h.weight_decay, 0.0), nullptr, s);
}

void sgd_step(float* p, const float* g, float* buf, int64_t n, const cpu::SgdParams& h,
              cudaStream_t s) {
  if (n <= 0) return;
  const bool momentum = h.momentum != 0.0;
  require_arg(!momentum || buf != nullptr, "cuda::sgd_step", "a momentum buffer, n", n);
  sgd_kernel<<<elementwise_blocks(n), kElementwiseThreads, 0, s>>>(
      p, g, buf, n, static_cast<float>(h.lr), static_cast<float>(h.weight_decay),
      static_cast<float>(h.momentum), momentum, h.nesterov);
  PX_CUDA_LAUNCH("sgd_step");
}

size_t sum_squares_scratch_bytes(int64_t n) {
  return static_cast<size_t>(sum_partials(n)) * sizeof(double);
}

void sum_squares(double* out, const float* x, int64_t n, void* scratch, cudaStream_t s) {
  require_arg(n >= 0, "cuda::sum_squares", "n >= 0, n", n);
  require_arg(scratch != nullptr, "cuda::sum_squares", "scratch of sum_squares_scratch_bytes(n), n",
              n);
  const int64_t parts = sum_partials(n);
  double* part = static_cast<double*>(scratch);
  sum_squares_partial_kernel<<<static_cast<unsigned>(parts), kSumThreads, 0, s>>>(part, x, n);
  PX_CUDA_LAUNCH("sum_squares partial");
  sum_partials_kernel<<<1, kSumThreads, 0, s>>>(out, part, parts);
  PX_CUDA_LAUNCH("sum_squares");
}

void scale_inplace(float* x, int64_t n, float s_, cudaStream_t s) {
  if (n <= 0) return;
  scale_kernel<<<elementwise_blocks(n), kElementwiseThreads, 0, s>>>(x, n, s_);
  PX_CUDA_LAUNCH("scale_inplace");
}

void has_nonfinite(int* flag, const float* x, int64_t n, cudaStream_t s) {
  if (n <= 0) return;
  nonfinite_kernel<<<elementwise_blocks(n), kElementwiseThreads, 0, s>>>(flag, x, n);
  PX_CUDA_LAUNCH("has_nonfinite");
}

void clip_by_norm(float* x, int64_t n, const double* sumsq, float max_norm, cudaStream_t s) {
  if (n <= 0 || max_norm <= 0.f) return;
  clip_kernel<<<elementwise_blocks(n), kElementwiseThreads, 0, s>>>(x, n, sumsq,
                                                                    static_cast<double>(max_norm));
  PX_CUDA_LAUNCH("clip_by_norm");
}

}  // namespace parallm::cuda
