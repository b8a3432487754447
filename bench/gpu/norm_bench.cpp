// LayerNorm and bias-gradient kernels at GPT-2 124M training size (16384
// rows x 768, bf16): forward, backward of the input only, the full backward
// (input, weight and bias gradients) and the linear layer's bias gradient
// alone. One JSON line each with the mean ms of 50 runs and the GB/s the
// kernel's compulsory traffic implies (each input read once, each output
// written once).
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <functional>

#include "kernels/cuda/blas.h"
#include "kernels/cuda/convert.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device.h"
#include "kernels/cuda/norm.h"

using namespace parallm;
using bf16 = __nv_bfloat16;

namespace {

template <class T>
T* device_array(int64_t n) {
  void* p = nullptr;
  PX_CUDA(cudaMalloc(&p, n * sizeof(T)));
  PX_CUDA(cudaMemset(p, 0, n * sizeof(T)));
  return static_cast<T*>(p);
}

void report(const char* name, double bytes, const std::function<void()>& run) {
  for (int i = 0; i < 5; ++i) run();
  cudaEvent_t t0, t1;
  PX_CUDA(cudaEventCreate(&t0));
  PX_CUDA(cudaEventCreate(&t1));
  const int iters = 50;
  PX_CUDA(cudaEventRecord(t0));
  for (int i = 0; i < iters; ++i) run();
  PX_CUDA(cudaEventRecord(t1));
  PX_CUDA(cudaEventSynchronize(t1));
  float ms = 0;
  PX_CUDA(cudaEventElapsedTime(&ms, t0, t1));
  ms /= iters;
  fmt::print(
      "{{\"bench\": \"gpu_norm\", \"kernel\": \"{}\", \"ms\": {:.4f}, \"GB_per_s\": {:.0f}}}\n",
      name, ms, bytes / (ms * 1e-3) / 1e9);
}

}  // namespace

int main() try {
  const int dev = cuda::select_device(0);
  const int64_t N = 16384, C = 768;
  bf16 *x = device_array<bf16>(N * C), *y = device_array<bf16>(N * C),
       *dy = device_array<bf16>(N * C), *dx = device_array<bf16>(N * C);
  bf16 *w = device_array<bf16>(C), *b = device_array<bf16>(C);
  float *mean = device_array<float>(N), *rstd = device_array<float>(N);
  float *dw = device_array<float>(C), *db = device_array<float>(C), *f = device_array<float>(N * C);
  cuda::fill(f, 0.5f, N * C, nullptr);
  cuda::f32_to_bf16(x, f, N * C, nullptr);
  cuda::f32_to_bf16(dy, f, N * C, nullptr);
  cuda::f32_to_bf16(w, f, C, nullptr);
  void* scratch = device_array<char>(cuda::layernorm_backward_scratch_bytes(N, C));
  const double act = static_cast<double>(N * C * sizeof(bf16));
  fmt::print(stderr, "device: {}\n", cuda::device_name(dev));
  report("layernorm_forward", 2 * act,
         [&] { cuda::layernorm_forward<bf16>(y, mean, rstd, x, w, b, N, C, 1e-5f, nullptr); });
  report("layernorm_backward_dinp", 3 * act, [&] {
    cuda::layernorm_backward<bf16>(dx, nullptr, nullptr, dy, x, w, mean, rstd, N, C, scratch,
                                   nullptr);
  });
  report("layernorm_backward_weights", 2 * act, [&] {
    cuda::layernorm_backward<bf16>(nullptr, dw, db, dy, x, w, mean, rstd, N, C, scratch, nullptr);
  });
  report("layernorm_backward_all", 4 * act, [&] {
    cuda::layernorm_backward<bf16>(dx, dw, db, dy, x, w, mean, rstd, N, C, scratch, nullptr);
  });
  cuda::Blas blas;
  report("linear_bias_grad", act, [&] {
    cuda::linear_backward<bf16>(blas, nullptr, nullptr, db, dy, x, w, N, C, C, nullptr);
  });
  return 0;
} catch (const std::exception& e) {
  fmt::print(stderr, "gpu_norm_bench: {}\n", e.what());
  return 1;
}
