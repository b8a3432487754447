// Memory-bound kernels at GPT-2 124M training sizes (16 x 1024 tokens):
// gelu_backward<bf16> on 16384 x 3072, add<bf16> on 16384 x 768 (each also
// on pointers one element off 16-byte alignment: the scalar path), and the
// fused cross-entropy loss-and-gradient on a 5300-row chunk with the padded
// (50304, rows aligned) and the true (50257) vocabulary. One JSON line per
// case: median of 20 timed calls after warm-up, and the GB/s that implies.
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "kernels/cuda/activation.h"
#include "kernels/cuda/convert.h"
#include "kernels/cuda/cross_entropy.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device.h"
#include "random_device.h"  // bench/gpu/

namespace {

using bf16 = __nv_bfloat16;
using parallm::bench::random_bf16;

// Median milliseconds of 20 calls of run (3 untimed first), each call
// between its own pair of events on stream.
double median_ms(const std::function<void()>& run, cudaStream_t stream) {
  for (int i = 0; i < 3; ++i) run();
  cudaEvent_t t0, t1;
  PX_CUDA(cudaEventCreate(&t0));
  PX_CUDA(cudaEventCreate(&t1));
  std::vector<float> ms(20);
  for (auto& m : ms) {
    PX_CUDA(cudaEventRecord(t0, stream));
    run();
    PX_CUDA(cudaEventRecord(t1, stream));
    PX_CUDA(cudaEventSynchronize(t1));
    PX_CUDA(cudaEventElapsedTime(&m, t0, t1));
  }
  PX_CUDA(cudaEventDestroy(t0));
  PX_CUDA(cudaEventDestroy(t1));
  std::sort(ms.begin(), ms.end());
  return 0.5 * (ms[9] + ms[10]);
}

void report(const std::string& device, const char* kernel, const char* shape, const char* path,
            double bytes, double ms) {
  std::printf(
      "{\"bench\": \"gpu_elementwise\", \"device\": \"%s\", \"dtype\": \"bf16\", \"kernel\": "
      "\"%s\", \"shape\": \"%s\", \"path\": \"%s\", \"bytes\": %.0f, \"ms\": %.4f, \"gbps\": "
      "%.1f}\n",
      device.c_str(), kernel, shape, path, bytes, ms, bytes / (ms * 1e-3) / 1e9);
  std::fflush(stdout);
}

}  // namespace

int main() {
  namespace cuda = parallm::cuda;
  if (cuda::device_count() == 0) {
    std::fprintf(stderr, "gpu_elementwise_bench: no CUDA device visible; nothing measured\n");
    return 1;
  }
  PX_CUDA(cudaSetDevice(0));
  const std::string device = cuda::device_name(0);
  cudaStream_t stream;
  PX_CUDA(cudaStreamCreate(&stream));

  {  // gelu_backward: reads inp, dout and dinp, writes dinp
    const int64_t n = int64_t{16384} * 3072;
    bf16* inp = random_bf16(n + 1, 1, -3.f, 3.f);
    bf16* dout = random_bf16(n + 1, 2, -1.f, 1.f);
    bf16* dinp = random_bf16(n + 1, 3, -1.f, 1.f);
    for (int off : {0, 1}) {
      const double ms = median_ms(
          [&] { cuda::gelu_backward<bf16>(dinp + off, inp + off, dout + off, n, stream); }, stream);
      report(device, "gelu_backward", "16384x3072", off ? "scalar" : "packed", 4.0 * n * 2, ms);
    }
    PX_CUDA(cudaFree(inp));
    PX_CUDA(cudaFree(dout));
    PX_CUDA(cudaFree(dinp));
  }
  {  // add: reads a and b, writes out
    const int64_t n = int64_t{16384} * 768;
    bf16* a = random_bf16(n + 1, 4, -1.f, 1.f);
    bf16* b = random_bf16(n + 1, 5, -1.f, 1.f);
    bf16* out = random_bf16(n + 1, 6, -1.f, 1.f);
    for (int off : {0, 1}) {
      const double ms =
          median_ms([&] { cuda::add<bf16>(out + off, a + off, b + off, n, stream); }, stream);
      report(device, "add", "16384x768", off ? "scalar" : "packed", 3.0 * n * 2, ms);
    }
    PX_CUDA(cudaFree(a));
    PX_CUDA(cudaFree(b));
    PX_CUDA(cudaFree(out));
  }
  for (int64_t V : {int64_t{50304}, int64_t{50257}}) {
    // ce_loss_grad_inplace: reads the logits twice, writes them once. The
    // calls after the first run on the previous gradient: the same traffic.
    const int64_t rows = 5300;
    bf16* logits = random_bf16(rows * V, 7, -4.f, 4.f);
    std::vector<int32_t> host_targets(rows);
    for (int64_t i = 0; i < rows; ++i) host_targets[i] = static_cast<int32_t>((i * 7919) % V);
    int32_t* targets = nullptr;
    float* loss = nullptr;
    PX_CUDA(cudaMalloc(reinterpret_cast<void**>(&targets), rows * sizeof(int32_t)));
    PX_CUDA(cudaMalloc(reinterpret_cast<void**>(&loss), rows * sizeof(float)));
    PX_CUDA(
        cudaMemcpy(targets, host_targets.data(), rows * sizeof(int32_t), cudaMemcpyHostToDevice));
    const double ms = median_ms(
        [&] {
          cuda::ce_loss_grad_inplace<bf16>(logits, loss, targets, 1.f / rows, rows, V, stream);
        },
        stream);
    const std::string shape = "5300x" + std::to_string(V);
    report(device, "ce_loss_grad_inplace", shape.c_str(), V % 8 == 0 ? "aligned_rows" : "odd_rows",
           3.0 * rows * V * 2, ms);
    PX_CUDA(cudaFree(logits));
    PX_CUDA(cudaFree(targets));
    PX_CUDA(cudaFree(loss));
  }
  PX_CUDA(cudaStreamDestroy(stream));
  return 0;
}
