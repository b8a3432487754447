// MoE row moves (moe_rows.h): block i takes fed row i, its threads strided
// over the row's W-element packs (W = 4 when C % 4 == 0, else 1), the slots
// of the row walked in order inside each pack. Whether a pack moves as one
// 16-byte access (every pointer 16-byte aligned) or element by element
// changes only the load, never which thread adds what, so the results are
// bitwise the same either way. Two fed rows never touch the same send row:
// send rows are distinct per kept assignment (model/moe/moe.cpp numbers
// them next[expert]++), which the CPU's parallel loop relies on as well.
#include <type_traits>

#include "kernels/cuda/arg_check.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/moe_rows.h"
#include "kernels/cuda/pack.cuh"
#include "kernels/cuda/reduce.cuh"

namespace parallm::cuda {
namespace {

constexpr int kMoeThreads = 256;

template <int W, bool kVector>
__device__ __forceinline__ Pack<float, W> load(const float* p) {
  if constexpr (kVector) {
    return load_pack<float, W>(p);
  } else {
    Pack<float, W> r;
#pragma unroll
    for (int k = 0; k < W; ++k) r.v[k] = p[k];
    return r;
  }
}

template <int W, bool kVector>
__device__ __forceinline__ void store(float* p, const Pack<float, W>& x) {
  if constexpr (kVector) {
    store_pack<float, W>(p, x);
  } else {
#pragma unroll
    for (int k = 0; k < W; ++k) p[k] = x.v[k];
  }
}

template <int W, bool kVector>
__global__ void __launch_bounds__(kMoeThreads)
    moe_gather_kernel(float* send, const float* x, cpu::AssignedRows r, int64_t C) {
  const int64_t i = blockIdx.x, a0 = r.fed[i] * r.k, a1 = a0 + r.k, packs = C / W;
  const float* xi = x + i * C;
  for (int64_t p = threadIdx.x; p < packs; p += blockDim.x) {
    const auto v = load<W, kVector>(xi + p * W);
    for (int64_t a = a0; a < a1; ++a) {
      const int64_t row = r.send_row[a];
      if (row >= 0) store<W, kVector>(send + row * C + p * W, v);
    }
  }
}

template <int W, bool kVector>
__global__ void __launch_bounds__(kMoeThreads)
    moe_combine_kernel(float* out, const float* y, const float* gate, cpu::AssignedRows r,
                       int64_t C) {
  const int64_t i = blockIdx.x, a0 = r.fed[i] * r.k, a1 = a0 + r.k, packs = C / W;
  float* o = out + i * C;
  for (int64_t p = threadIdx.x; p < packs; p += blockDim.x) {
    Pack<float, W> acc;
#pragma unroll
    for (int k = 0; k < W; ++k) acc.v[k] = 0.f;
    for (int64_t a = a0; a < a1; ++a) {  // slot order, as the CPU
      const int64_t row = r.send_row[a];
      if (row < 0) continue;
      const float g = gate[a];
      const auto ya = load<W, kVector>(y + row * C + p * W);
#pragma unroll
      for (int k = 0; k < W; ++k) acc.v[k] += g * ya.v[k];
    }
    store<W, kVector>(o + p * W, acc);
  }
}

// The slot loop is uniform over the block (it reads only fed and send_row),
// so every thread reaches block_sum.
template <int W, bool kVector>
__global__ void __launch_bounds__(kMoeThreads)
    moe_combine_backward_kernel(float* dy, float* dgate, const float* dout, const float* y,
                                const float* gate, cpu::AssignedRows r, int64_t C) {
  __shared__ double shm[33];
  const int64_t i = blockIdx.x, a0 = r.fed[i] * r.k, a1 = a0 + r.k, packs = C / W;
  const float* d = dout + i * C;
  for (int64_t a = a0; a < a1; ++a) {
    const int64_t row = r.send_row[a];
    if (row < 0) continue;
    const float g = gate[a];
    const float* ya = y + row * C;
    float* dya = dy + row * C;
    double dot = 0.0;
    for (int64_t p = threadIdx.x; p < packs; p += blockDim.x) {
      const auto dp = load<W, kVector>(d + p * W);
      const auto yp = load<W, kVector>(ya + p * W);
      auto acc = load<W, kVector>(dya + p * W);
#pragma unroll
      for (int k = 0; k < W; ++k) {
        dot += static_cast<double>(dp.v[k]) * yp.v[k];
        acc.v[k] += g * dp.v[k];
      }
      store<W, kVector>(dya + p * W, acc);
    }
    dot = block_sum(dot, shm);
    if (threadIdx.x == 0) dgate[a] = static_cast<float>(dot);
  }
}

template <int W, bool kVector>
__global__ void __launch_bounds__(kMoeThreads)
    moe_gather_backward_kernel(float* dx, const float* dsend, cpu::AssignedRows r, int64_t C) {
  const int64_t i = blockIdx.x, a0 = r.fed[i] * r.k, a1 = a0 + r.k, packs = C / W;
  float* dxi = dx + i * C;
  for (int64_t p = threadIdx.x; p < packs; p += blockDim.x) {
    auto acc = load<W, kVector>(dxi + p * W);
    for (int64_t a = a0; a < a1; ++a) {
      const int64_t row = r.send_row[a];
      if (row < 0) continue;
      const auto ds = load<W, kVector>(dsend + row * C + p * W);
#pragma unroll
      for (int k = 0; k < W; ++k) acc.v[k] += ds.v[k];
    }
    store<W, kVector>(dxi + p * W, acc);
  }
}

// False when there is nothing to do.
bool check(const char* name, const cpu::AssignedRows& r, int64_t C) {
  require_arg(r.nfed >= 0 && r.nfed < (int64_t{1} << 31), name, "0 <= nfed < 2^31, nfed", r.nfed);
  require_arg(r.k >= 0, name, "k >= 0, k", r.k);
  require_arg(C >= 0, name, "C >= 0, C", C);
  return r.nfed > 0 && r.k > 0 && C > 0;
}

// Calls run(width, vector) with the pack width for C and whether the packs
// may move as 16-byte accesses (`aligned`: every row pointer's base is).
template <class Run>
void run_packed(int64_t C, bool aligned, Run&& run) {
  if (C % 4 != 0)
    run(std::integral_constant<int, 1>{}, std::false_type{});
  else if (aligned)
    run(std::integral_constant<int, 4>{}, std::true_type{});
  else
    run(std::integral_constant<int, 4>{}, std::false_type{});
}

unsigned row_blocks(const cpu::AssignedRows& r) { return static_cast<unsigned>(r.nfed); }

}  // namespace

void moe_gather(float* send, const float* x, const cpu::AssignedRows& r, int64_t C,
                cudaStream_t s) {
  if (!check("cuda::moe_gather", r, C)) return;
  run_packed(C, is_aligned16(send) && is_aligned16(x), [&](auto w, auto v) {
    moe_gather_kernel<decltype(w)::value, decltype(v)::value>
        <<<row_blocks(r), kMoeThreads, 0, s>>>(send, x, r, C);
    PX_CUDA_LAUNCH("moe_gather");
  });
}

void moe_combine(float* out, const float* y, const float* gate, const cpu::AssignedRows& r,
                 int64_t C, cudaStream_t s) {
  if (!check("cuda::moe_combine", r, C)) return;
  run_packed(C, is_aligned16(out) && is_aligned16(y), [&](auto w, auto v) {
    moe_combine_kernel<decltype(w)::value, decltype(v)::value>
        <<<row_blocks(r), kMoeThreads, 0, s>>>(out, y, gate, r, C);
    PX_CUDA_LAUNCH("moe_combine");
  });
}

void moe_combine_backward(float* dy, float* dgate, const float* dout, const float* y,
                          const float* gate, const cpu::AssignedRows& r, int64_t C,
                          cudaStream_t s) {
  if (!check("cuda::moe_combine_backward", r, C)) return;
  const bool aligned = is_aligned16(dy) && is_aligned16(dout) && is_aligned16(y);
  run_packed(C, aligned, [&](auto w, auto v) {
    moe_combine_backward_kernel<decltype(w)::value, decltype(v)::value>
        <<<row_blocks(r), kMoeThreads, 0, s>>>(dy, dgate, dout, y, gate, r, C);
    PX_CUDA_LAUNCH("moe_combine_backward");
  });
}

void moe_gather_backward(float* dx, const float* dsend, const cpu::AssignedRows& r, int64_t C,
                         cudaStream_t s) {
  if (!check("cuda::moe_gather_backward", r, C)) return;
  run_packed(C, is_aligned16(dx) && is_aligned16(dsend), [&](auto w, auto v) {
    moe_gather_backward_kernel<decltype(w)::value, decltype(v)::value>
        <<<row_blocks(r), kMoeThreads, 0, s>>>(dx, dsend, r, C);
    PX_CUDA_LAUNCH("moe_gather_backward");
  });
}

}  // namespace parallm::cuda
