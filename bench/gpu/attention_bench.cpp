// Times cuda::attention_forward and forward+backward (bf16, causal) on GPT-2
// shapes with cudaEvents: warm-up, then the median of 20 runs. One JSON line
// per case: ms and TFLOP/s, counting causal FLOPs as 2*2*B*H*T*T*D/2 for the
// forward and 2.5x that for the backward (the convention of FlashAttention's
// benchmarks). bench/gpu/attention_torch.py prints the same fields for
// PyTorch's scaled_dot_product_attention.
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <vector>

#include "kernels/cuda/attention.h"
#include "kernels/cuda/convert.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device.h"

namespace {

using parallm::cpu::AttnDims;
namespace cuda = parallm::cuda;

struct Shape {
  int64_t B, H, T, D;
};

float median_ms(const std::function<void()>& fn, int reps) {
  cudaEvent_t a, b;
  PX_CUDA(cudaEventCreate(&a));
  PX_CUDA(cudaEventCreate(&b));
  for (int i = 0; i < 3; ++i) fn();
  std::vector<float> ms;
  for (int i = 0; i < reps; ++i) {
    PX_CUDA(cudaEventRecord(a));
    fn();
    PX_CUDA(cudaEventRecord(b));
    PX_CUDA(cudaEventSynchronize(b));
    float t = 0.f;
    PX_CUDA(cudaEventElapsedTime(&t, a, b));
    ms.push_back(t);
  }
  PX_CUDA(cudaEventDestroy(a));
  PX_CUDA(cudaEventDestroy(b));
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

// Device buffer of n bf16 values, filled by a cheap deterministic pattern.
__nv_bfloat16* filled(int64_t n, float phase) {
  std::vector<float> h(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) h[i] = std::sin(0.37f * static_cast<float>(i % 9973) + phase);
  float* f = nullptr;
  __nv_bfloat16* out = nullptr;
  PX_CUDA(cudaMalloc(reinterpret_cast<void**>(&f), n * sizeof(float)));
  PX_CUDA(cudaMalloc(reinterpret_cast<void**>(&out), n * sizeof(__nv_bfloat16)));
  PX_CUDA(cudaMemcpy(f, h.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  cuda::f32_to_bf16(out, f, n, nullptr);
  PX_CUDA(cudaDeviceSynchronize());
  PX_CUDA(cudaFree(f));
  return out;
}

void run(const Shape& s) {
  AttnDims d{};
  d.B = s.B;
  d.Tq = d.Tk = s.T;
  d.Hq = d.Hkv = s.H;
  d.D = s.D;
  d.causal = true;
  const int64_t n = s.B * s.T * s.H * s.D;
  const float scale = 1.f / std::sqrt(static_cast<float>(s.D));
  __nv_bfloat16 *q = filled(n, 0.f), *k = filled(n, 1.f), *v = filled(n, 2.f);
  __nv_bfloat16 *dout = filled(n, 3.f), *out = filled(n, 0.f);
  __nv_bfloat16 *dq = filled(n, 0.f), *dk = filled(n, 0.f), *dv = filled(n, 0.f);
  float* lse = nullptr;
  void* scratch = nullptr;
  PX_CUDA(cudaMalloc(reinterpret_cast<void**>(&lse), s.B * s.H * s.T * sizeof(float)));
  PX_CUDA(cudaMalloc(&scratch, cuda::attention_backward_scratch_bytes(d)));
  auto fwd = [&] { cuda::attention_forward(out, lse, q, k, v, d, scale, nullptr); };
  auto fwd_bwd = [&] {
    fwd();
    cuda::attention_backward(dq, dk, dv, dout, q, k, v, out, lse, d, scale, scratch, nullptr);
  };
  const double fwd_flops = 2.0 * 2.0 * s.B * s.H * s.T * s.T * s.D / 2.0;
  const float f_ms = median_ms(fwd, 20), fb_ms = median_ms(fwd_bwd, 20);
  const char* fmt =
      "{\"impl\": \"parallm\", \"pass\": \"%s\", \"B\": %lld, \"H\": %lld, \"T\": %lld, "
      "\"D\": %lld, \"dtype\": \"bf16\", \"causal\": true, \"ms\": %.4f, \"tflops\": %.2f}\n";
  std::printf(fmt, "fwd", (long long)s.B, (long long)s.H, (long long)s.T, (long long)s.D, f_ms,
              fwd_flops / (f_ms * 1e-3) / 1e12);
  std::printf(fmt, "fwd_bwd", (long long)s.B, (long long)s.H, (long long)s.T, (long long)s.D, fb_ms,
              3.5 * fwd_flops / (fb_ms * 1e-3) / 1e12);
  std::fflush(stdout);
  for (void* p : {(void*)q, (void*)k, (void*)v, (void*)dout, (void*)out, (void*)dq, (void*)dk,
                  (void*)dv, (void*)lse, scratch})
    PX_CUDA(cudaFree(p));
}

}  // namespace

int main() {
  if (cuda::device_count() == 0) {
    std::fprintf(stderr, "parallm_gpu_attention_bench: no CUDA device visible\n");
    return 1;
  }
  for (const Shape& s : {Shape{16, 12, 1024, 64}, Shape{16, 12, 4096, 64}, Shape{16, 8, 1024, 128}})
    run(s);
  return 0;
}
