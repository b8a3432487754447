// SIMT attention kernels (attention_launch.h): one warp per query row
// (forward, dq, row delta) or per key row (dk, dv), fp32 math for any
// D <= kAttnSimtMaxD, with the document mask. Lanes take 32 keys (or
// queries) at a time for the dot products, then each lane owns D/32 output
// columns. Every output row has exactly one writing warp: deterministic.
#include <cmath>

#include "kernels/cuda/attention_common.cuh"
#include "kernels/cuda/attention_launch.h"
#include "kernels/cuda/cuda_check.h"

namespace parallm::cuda::detail {
namespace {

constexpr int kWarps = 4;  // warps (rows) per block
constexpr int kPerLane = kAttnSimtMaxD / 32;
constexpr unsigned kFull = 0xffffffffu;

int row_blocks(int64_t rows) {
  const int64_t b = (rows + kWarps - 1) / kWarps;
  return static_cast<int>(b < (1 << 16) ? b : (1 << 16));  // grid-stride loops cover the rest
}

template <class T>
__device__ float dot_row(const float* a, const T* b, int64_t D) {
  float s = 0.f;
  for (int64_t e = 0; e < D; ++e) s += a[e] * to_float(b[e]);
  return s;
}

template <class T>
__global__ void __launch_bounds__(kWarps * 32)
    row_delta_kernel(float* delta, const T* dout, const T* out, cpu::AttnDims d) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t rows = d.B * d.Hq * d.Tq;
  for (int64_t row = int64_t{blockIdx.x} * kWarps + warp; row < rows;
       row += int64_t{gridDim.x} * kWarps) {
    const int64_t i = row % d.Tq, h = (row / d.Tq) % d.Hq, b = row / (d.Tq * d.Hq);
    const int64_t off = ((b * d.Tq + i) * d.Hq + h) * d.D;
    float s = 0.f;
    for (int64_t e = lane; e < d.D; e += 32) s += to_float(dout[off + e]) * to_float(out[off + e]);
    s = warp_sum(s);
    if (lane == 0) delta[row] = s;  // row = (b * Hq + h) * Tq + i
  }
}

template <class T>
__global__ void __launch_bounds__(kWarps * 32)
    forward_simt_kernel(T* out, float* lse, const T* q, const T* k, const T* v, cpu::AttnDims d,
                        float scale) {
  __shared__ float qs[kWarps][kAttnSimtMaxD];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t rows = d.B * d.Hq * d.Tq, group = d.Hq / d.Hkv, ldk = d.Hkv * d.D;
  for (int64_t row = int64_t{blockIdx.x} * kWarps + warp; row < rows;
       row += int64_t{gridDim.x} * kWarps) {
    const int64_t i = row % d.Tq, h = (row / d.Tq) % d.Hq, b = row / (d.Tq * d.Hq);
    const int64_t off = ((b * d.Tq + i) * d.Hq + h) * d.D;
    const T* kb = k + (b * d.Tk * d.Hkv + h / group) * d.D;  // key j at kb + j * ldk
    const T* vb = v + (b * d.Tk * d.Hkv + h / group) * d.D;
    __syncwarp();
    for (int64_t e = lane; e < d.D; e += 32) qs[warp][e] = to_float(q[off + e]);
    __syncwarp();
    const int64_t j0 = first_key(d, b, i), j1 = visible_end(d, i);
    float m = -INFINITY, l = 0.f, acc[kPerLane];
#pragma unroll
    for (int r = 0; r < kPerLane; ++r) acc[r] = 0.f;
    for (int64_t c = j0; c < j1; c += 32) {
      const int64_t j = c + lane;
      const float sc = j < j1 ? dot_row(qs[warp], kb + j * ldk, d.D) * scale : -INFINITY;
      const float mn = fmaxf(m, warp_max(sc));  // finite: lane 0's key is visible
      const float alpha = expf(m - mn);
      const float p = j < j1 ? expf(sc - mn) : 0.f;
      l = l * alpha + warp_sum(p);
#pragma unroll
      for (int r = 0; r < kPerLane; ++r) acc[r] *= alpha;
      const int n = static_cast<int>(j1 - c < 32 ? j1 - c : 32);
      for (int jj = 0; jj < n; ++jj) {
        const float pj = __shfl_sync(kFull, p, jj);
        const T* vr = vb + (c + jj) * ldk;
#pragma unroll
        for (int r = 0; r < kPerLane; ++r) {
          const int64_t e = lane + 32 * r;
          if (e < d.D) acc[r] += pj * to_float(vr[e]);
        }
      }
      m = mn;
    }
    const float inv = l > 0.f ? 1.f / l : 0.f;
#pragma unroll
    for (int r = 0; r < kPerLane; ++r) {
      const int64_t e = lane + 32 * r;
      if (e < d.D) out[off + e] = from_float<T>(acc[r] * inv);
    }
    if (lane == 0) lse[row] = l > 0.f ? m + logf(l) : -INFINITY;
  }
}

// dq of one query row per warp: dq += scale * sum_j P (dP - delta) k_j.
template <class T>
__global__ void __launch_bounds__(kWarps * 32)
    backward_dq_simt_kernel(T* dq, const T* dout, const T* q, const T* k, const T* v,
                            const float* lse, const float* delta, cpu::AttnDims d, float scale) {
  __shared__ float qs[kWarps][kAttnSimtMaxD], dos[kWarps][kAttnSimtMaxD];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t rows = d.B * d.Hq * d.Tq, group = d.Hq / d.Hkv, ldk = d.Hkv * d.D;
  for (int64_t row = int64_t{blockIdx.x} * kWarps + warp; row < rows;
       row += int64_t{gridDim.x} * kWarps) {
    const int64_t i = row % d.Tq, h = (row / d.Tq) % d.Hq, b = row / (d.Tq * d.Hq);
    const float lr = lse[row];
    const int64_t j0 = first_key(d, b, i), j1 = visible_end(d, i);
    if (lr == -INFINITY || j1 <= j0) continue;  // no visible key: no gradient (warp-uniform)
    const float di = delta[row];
    const int64_t off = ((b * d.Tq + i) * d.Hq + h) * d.D;
    const T* kb = k + (b * d.Tk * d.Hkv + h / group) * d.D;
    const T* vb = v + (b * d.Tk * d.Hkv + h / group) * d.D;
    __syncwarp();
    for (int64_t e = lane; e < d.D; e += 32) {
      qs[warp][e] = to_float(q[off + e]);
      dos[warp][e] = to_float(dout[off + e]);
    }
    __syncwarp();
    float acc[kPerLane];
#pragma unroll
    for (int r = 0; r < kPerLane; ++r) acc[r] = 0.f;
    for (int64_t c = j0; c < j1; c += 32) {
      const int64_t j = c + lane;
      float ds = 0.f;
      if (j < j1) {
        const float p = expf(dot_row(qs[warp], kb + j * ldk, d.D) * scale - lr);
        ds = p * (dot_row(dos[warp], vb + j * ldk, d.D) - di);
      }
      const int n = static_cast<int>(j1 - c < 32 ? j1 - c : 32);
      for (int jj = 0; jj < n; ++jj) {
        const float dsj = __shfl_sync(kFull, ds, jj);
        const T* kr = kb + (c + jj) * ldk;
#pragma unroll
        for (int r = 0; r < kPerLane; ++r) {
          const int64_t e = lane + 32 * r;
          if (e < d.D) acc[r] += dsj * to_float(kr[e]);
        }
      }
    }
#pragma unroll
    for (int r = 0; r < kPerLane; ++r) {
      const int64_t e = lane + 32 * r;
      if (e < d.D) dq[off + e] = from_float<T>(to_float(dq[off + e]) + scale * acc[r]);
    }
  }
}

// dk, dv of one key row per warp, summed over the group's query heads:
// dv += sum_i P dout_i, dk += scale * sum_i P (dP - delta) q_i.
template <class T>
__global__ void __launch_bounds__(kWarps * 32)
    backward_dkv_simt_kernel(T* dk, T* dv, const T* dout, const T* q, const T* k, const T* v,
                             const float* lse, const float* delta, cpu::AttnDims d, float scale) {
  __shared__ float ks[kWarps][kAttnSimtMaxD], vs[kWarps][kAttnSimtMaxD];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t rows = d.B * d.Hkv * d.Tk, group = d.Hq / d.Hkv, ldq = d.Hq * d.D;
  for (int64_t row = int64_t{blockIdx.x} * kWarps + warp; row < rows;
       row += int64_t{gridDim.x} * kWarps) {
    const int64_t j = row % d.Tk, g = (row / d.Tk) % d.Hkv, b = row / (d.Tk * d.Hkv);
    const int64_t off = ((b * d.Tk + j) * d.Hkv + g) * d.D;
    __syncwarp();
    for (int64_t e = lane; e < d.D; e += 32) {
      ks[warp][e] = to_float(k[off + e]);
      vs[warp][e] = to_float(v[off + e]);
    }
    __syncwarp();
    float acck[kPerLane], accv[kPerLane];
#pragma unroll
    for (int r = 0; r < kPerLane; ++r) acck[r] = accv[r] = 0.f;
    // Queries before i_lo cannot see key j (causal).
    int64_t i_lo = d.causal ? d.k_pos0 + j - d.q_pos0 : 0;
    if (i_lo < 0) i_lo = 0;
    for (int64_t h = g * group; h < (g + 1) * group; ++h) {
      const T* qb = q + (b * d.Tq * d.Hq + h) * d.D;  // query i at qb + i * ldq
      const T* dob = dout + (b * d.Tq * d.Hq + h) * d.D;
      const float* lb = lse + (b * d.Hq + h) * d.Tq;
      const float* db = delta + (b * d.Hq + h) * d.Tq;
      for (int64_t c = i_lo; c < d.Tq; c += 32) {
        const int64_t i = c + lane;
        float p = 0.f, ds = 0.f;
        if (i < d.Tq && lb[i] != -INFINITY && first_key(d, b, i) <= j && j < visible_end(d, i)) {
          p = expf(dot_row(ks[warp], qb + i * ldq, d.D) * scale - lb[i]);
          ds = p * (dot_row(vs[warp], dob + i * ldq, d.D) - db[i]);
        }
        const int n = static_cast<int>(d.Tq - c < 32 ? d.Tq - c : 32);
        for (int ii = 0; ii < n; ++ii) {
          const float pi = __shfl_sync(kFull, p, ii), dsi = __shfl_sync(kFull, ds, ii);
          const T* qr = qb + (c + ii) * ldq;
          const T* dor = dob + (c + ii) * ldq;
#pragma unroll
          for (int r = 0; r < kPerLane; ++r) {
            const int64_t e = lane + 32 * r;
            if (e < d.D) {
              accv[r] += pi * to_float(dor[e]);
              acck[r] += dsi * to_float(qr[e]);
            }
          }
        }
      }
    }
#pragma unroll
    for (int r = 0; r < kPerLane; ++r) {
      const int64_t e = lane + 32 * r;
      if (e < d.D) {
        dv[off + e] = from_float<T>(to_float(dv[off + e]) + accv[r]);
        dk[off + e] = from_float<T>(to_float(dk[off + e]) + scale * acck[r]);
      }
    }
  }
}

}  // namespace

template <class T>
void attention_row_delta(float* delta, const T* dout, const T* out, const cpu::AttnDims& d,
                         cudaStream_t s) {
  const int64_t rows = d.B * d.Hq * d.Tq;
  if (rows == 0) return;
  row_delta_kernel<T><<<row_blocks(rows), kWarps * 32, 0, s>>>(delta, dout, out, d);
  PX_CUDA_LAUNCH("attention_row_delta");
}

template <class T>
void attention_forward_simt(T* out, float* lse, const T* q, const T* k, const T* v,
                            const cpu::AttnDims& d, float scale, cudaStream_t s) {
  const int64_t rows = d.B * d.Hq * d.Tq;
  if (rows == 0) return;
  forward_simt_kernel<T><<<row_blocks(rows), kWarps * 32, 0, s>>>(out, lse, q, k, v, d, scale);
  PX_CUDA_LAUNCH("attention_forward_simt");
}

template <class T>
void attention_backward_simt(T* dq, T* dk, T* dv, const T* dout, const T* q, const T* k, const T* v,
                             const float* lse, const float* delta, const cpu::AttnDims& d,
                             float scale, cudaStream_t s) {
  const int64_t qrows = d.B * d.Hq * d.Tq, krows = d.B * d.Hkv * d.Tk;
  if (qrows == 0 || krows == 0) return;
  backward_dq_simt_kernel<T>
      <<<row_blocks(qrows), kWarps * 32, 0, s>>>(dq, dout, q, k, v, lse, delta, d, scale);
  PX_CUDA_LAUNCH("attention_backward_dq_simt");
  backward_dkv_simt_kernel<T>
      <<<row_blocks(krows), kWarps * 32, 0, s>>>(dk, dv, dout, q, k, v, lse, delta, d, scale);
  PX_CUDA_LAUNCH("attention_backward_dkv_simt");
}

#define PARALLM_INSTANTIATE_ATTENTION_SIMT(T)                                                  \
  template void attention_row_delta<T>(float*, const T*, const T*, const cpu::AttnDims&,       \
                                       cudaStream_t);                                          \
  template void attention_forward_simt<T>(T*, float*, const T*, const T*, const T*,            \
                                          const cpu::AttnDims&, float, cudaStream_t);          \
  template void attention_backward_simt<T>(T*, T*, T*, const T*, const T*, const T*, const T*, \
                                           const float*, const float*, const cpu::AttnDims&,   \
                                           float, cudaStream_t);
PARALLM_INSTANTIATE_ATTENTION_SIMT(float)
PARALLM_INSTANTIATE_ATTENTION_SIMT(__nv_bfloat16)
#undef PARALLM_INSTANTIATE_ATTENTION_SIMT

}  // namespace parallm::cuda::detail
