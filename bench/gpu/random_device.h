// Random inputs for the GPU benchmarks: a device bf16 buffer of n values
// uniform in [lo, hi), made on the host by a xorshift generator and
// converted on the device (a constant fill draws less power and would
// overstate a GEMM's clocks). The caller frees it with cudaFree.
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "kernels/cuda/convert.h"
#include "kernels/cuda/cuda_check.h"

namespace parallm::bench {

inline __nv_bfloat16* random_bf16(int64_t n, uint64_t seed, float lo = -1.f, float hi = 1.f) {
  std::vector<float> host(static_cast<size_t>(n));
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (auto& v : host) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    v = lo + (hi - lo) * (static_cast<float>(x >> 40) / static_cast<float>(1 << 24));
  }
  float* staging = nullptr;
  __nv_bfloat16* out = nullptr;
  PX_CUDA(cudaMalloc(reinterpret_cast<void**>(&staging), n * sizeof(float)));
  PX_CUDA(cudaMalloc(reinterpret_cast<void**>(&out), n * sizeof(__nv_bfloat16)));
  PX_CUDA(cudaMemcpy(staging, host.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  cuda::f32_to_bf16(out, staging, n, nullptr);
  PX_CUDA(cudaDeviceSynchronize());
  PX_CUDA(cudaFree(staging));
  return out;
}

}  // namespace parallm::bench
