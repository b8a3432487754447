// 16-bit float storage on the GPU (lowp.h). Finite values and infinities go
// through the hardware conversions (cvt.rn: round to nearest even, subnormals
// kept, f16 overflow to +-Inf); NaN is converted by hand, since cvt returns a
// canonical NaN (sign and payload lost) where the CPU keeps sign and payload.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/lowp.h"

namespace parallm::cuda {
namespace {

__device__ inline bool is_nan_bits(uint32_t u) { return (u & 0x7fffffffu) > 0x7f800000u; }

// f32 -> 16-bit bits. NaN: bf16 keeps the top half and sets the quiet bit
// (tensor/half.h's f32_to_bf16); f16 keeps the sign and the payload's top 10
// bits and sets the quiet bit, as F16C's vcvtps2ph does (the CPU's block
// path; its scalar tail drops the payload, a NaN either way).
template <bool F16>
__device__ inline uint16_t narrow(float x) {
  const uint32_t u = __float_as_uint(x);
  if constexpr (F16) {
    if (is_nan_bits(u))
      return static_cast<uint16_t>(((u >> 16) & 0x8000u) | 0x7e00u | ((u >> 13) & 0x3ffu));
    return __half_as_ushort(__float2half_rn(x));
  } else {
    if (is_nan_bits(u)) return static_cast<uint16_t>((u >> 16) | 0x40u);
    return __bfloat16_as_ushort(__float2bfloat16_rn(x));
  }
}

// 16-bit bits -> f32, exact. bf16 is the top half of an f32, so a shift keeps
// NaN payloads as the CPU does; f16 NaN gets its payload shifted up and the
// quiet bit set, as F16C's vcvtph2ps does (cvt.f32.f16 gives a canonical NaN).
template <bool F16>
__device__ inline float widen(uint16_t h) {
  if constexpr (F16) {
    const uint32_t v = h;
    if ((v & 0x7fffu) > 0x7c00u)
      return __uint_as_float(((v & 0x8000u) << 16) | 0x7fc00000u | ((v & 0x3ffu) << 13));
    return __half2float(__ushort_as_half(h));
  } else {
    return __uint_as_float(static_cast<uint32_t>(h) << 16);
  }
}

template <bool F16>
__global__ void round_to_lowp_kernel(uint16_t* dst, const float* src, int64_t n) {
  for (int64_t i = grid_index(); i < n; i += grid_stride()) dst[i] = narrow<F16>(src[i]);
}

template <bool F16>
__global__ void widen_lowp_kernel(float* dst, const uint16_t* src, int64_t n) {
  for (int64_t i = grid_index(); i < n; i += grid_stride()) dst[i] = widen<F16>(src[i]);
}

template <bool F16>
__global__ void round_inplace_kernel(float* x, int64_t n) {
  for (int64_t i = grid_index(); i < n; i += grid_stride()) x[i] = widen<F16>(narrow<F16>(x[i]));
}

}  // namespace

void round_to_lowp(uint16_t* dst, const float* src, int64_t n, cpu::LowpType t, cudaStream_t s) {
  if (n <= 0) return;
  if (t == cpu::LowpType::F16)
    round_to_lowp_kernel<true><<<elementwise_blocks(n), kElementwiseThreads, 0, s>>>(dst, src, n);
  else
    round_to_lowp_kernel<false><<<elementwise_blocks(n), kElementwiseThreads, 0, s>>>(dst, src, n);
  PX_CUDA_LAUNCH("round_to_lowp");
}

void widen_lowp(float* dst, const uint16_t* src, int64_t n, cpu::LowpType t, cudaStream_t s) {
  if (n <= 0) return;
  if (t == cpu::LowpType::F16)
    widen_lowp_kernel<true><<<elementwise_blocks(n), kElementwiseThreads, 0, s>>>(dst, src, n);
  else
    widen_lowp_kernel<false><<<elementwise_blocks(n), kElementwiseThreads, 0, s>>>(dst, src, n);
  PX_CUDA_LAUNCH("widen_lowp");
}

void round_inplace(float* x, int64_t n, cpu::LowpType t, cudaStream_t s) {
  if (n <= 0) return;
  if (t == cpu::LowpType::F16)
    round_inplace_kernel<true><<<elementwise_blocks(n), kElementwiseThreads, 0, s>>>(x, n);
  else
    round_inplace_kernel<false><<<elementwise_blocks(n), kElementwiseThreads, 0, s>>>(x, n);
  PX_CUDA_LAUNCH("round_inplace");
}

}  // namespace parallm::cuda
