// bf16 GEMM throughput through cuda::gemm (cuBLASLt): a square 8192^3 and the
// GPT-2 124M linear layers at 16 x 1024 tokens (forward, out = inp * W^T).
// One JSON line per shape with its TFLOP/s, then the best of them: the
// "measured GEMM peak" that MFU figures are quoted against. Random inputs (a
// constant fill draws less power and would overstate the clocks).
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "kernels/cuda/blas.h"
#include "kernels/cuda/convert.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device.h"
#include "random_device.h"  // bench/gpu/

namespace {

using parallm::bench::random_bf16;
using parallm::cuda::Blas;

struct Shape {
  const char* name;
  int64_t M, N, K;  // out (M, N) = inp (M, K) * W (N, K)^T
};

double time_ms(Blas& blas, const Shape& s, const __nv_bfloat16* A, const __nv_bfloat16* W,
               __nv_bfloat16* C, cudaStream_t stream, int iters) {
  cudaEvent_t t0, t1;
  PX_CUDA(cudaEventCreate(&t0));
  PX_CUDA(cudaEventCreate(&t1));
  PX_CUDA(cudaEventRecord(t0, stream));
  for (int i = 0; i < iters; ++i)
    parallm::cuda::gemm<__nv_bfloat16>(blas, false, true, s.M, s.N, s.K, 1.f, A, s.K, W, s.K, 0.f,
                                       C, s.N, stream);
  PX_CUDA(cudaEventRecord(t1, stream));
  PX_CUDA(cudaEventSynchronize(t1));
  float ms = 0;
  PX_CUDA(cudaEventElapsedTime(&ms, t0, t1));
  PX_CUDA(cudaEventDestroy(t0));
  PX_CUDA(cudaEventDestroy(t1));
  return ms / iters;
}

}  // namespace

int main() {
  if (parallm::cuda::device_count() == 0) {
    std::fprintf(stderr, "parallm_gpu_gemm_bench: no CUDA device visible; nothing measured\n");
    return 1;
  }
  PX_CUDA(cudaSetDevice(0));
  const std::string device = parallm::cuda::device_name(0);
  const int64_t tokens = 16 * 1024;
  const Shape shapes[] = {
      {"square_8192", 8192, 8192, 8192},    {"gpt2_qkv", tokens, 2304, 768},
      {"gpt2_attn_proj", tokens, 768, 768}, {"gpt2_fc", tokens, 3072, 768},
      {"gpt2_fc_proj", tokens, 768, 3072},  {"gpt2_lm_head", tokens, 50304, 768},
  };
  Blas blas;  // bf16 in and out, fp32 accumulation
  cudaStream_t stream;
  PX_CUDA(cudaStreamCreate(&stream));
  double best = 0;
  for (const Shape& s : shapes) {
    __nv_bfloat16* A = random_bf16(s.M * s.K, 1);
    __nv_bfloat16* W = random_bf16(s.N * s.K, 2);
    __nv_bfloat16* C = nullptr;
    PX_CUDA(cudaMalloc(reinterpret_cast<void**>(&C), s.M * s.N * sizeof(__nv_bfloat16)));
    const double flops = 2.0 * s.M * s.N * s.K;
    time_ms(blas, s, A, W, C, stream, 3);  // warm-up: heuristics, clocks
    const double probe = time_ms(blas, s, A, W, C, stream, 3);
    const int iters = std::clamp(static_cast<int>(500.0 / std::max(probe, 1e-3)), 5, 1000);
    const double ms = time_ms(blas, s, A, W, C, stream, iters);
    const double tflops = flops / (ms * 1e-3) / 1e12;
    best = std::max(best, tflops);
    std::printf(
        "{\"bench\": \"gpu_gemm\", \"device\": \"%s\", \"dtype\": \"bf16\", \"shape\": \"%s\", "
        "\"M\": %lld, \"N\": %lld, \"K\": %lld, \"iters\": %d, \"ms\": %.4f, \"tflops\": %.1f}\n",
        device.c_str(), s.name, static_cast<long long>(s.M), static_cast<long long>(s.N),
        static_cast<long long>(s.K), iters, ms, tflops);
    std::fflush(stdout);
    PX_CUDA(cudaFree(A));
    PX_CUDA(cudaFree(W));
    PX_CUDA(cudaFree(C));
  }
  std::printf(
      "{\"bench\": \"gpu_gemm\", \"device\": \"%s\", \"dtype\": \"bf16\", "
      "\"measured_peak_tflops\": %.1f}\n",
      device.c_str(), best);
  PX_CUDA(cudaStreamDestroy(stream));
  return 0;
}
