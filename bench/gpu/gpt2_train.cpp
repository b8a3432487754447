// GPU training throughput of a GPT-2 (default the 124M model with llm.c's
// padded vocabulary, sequence 1024, bf16): steps of forward + backward +
// clipping + AdamW on synthetic tokens, timed after warm-up; prints one JSON
// line with tokens/s, model TFLOP/s, MFU against the given bf16 dense peak,
// the loss and the device allocator's peak bytes per tag.
// bench/gpu/gpt2_torch.py runs the same model and step in PyTorch.
//   gpu_gpt2_train [--model NAME] [--batch B] [--seq T] [--steps S]
//                  [--precision bf16|fp32] [--peak-tflops P] [--profile-steps K]
// After the timed steps, K more (default 3) record an event per phase and
// the line gains the GPU milliseconds per step of each phase.
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "base/error.h"
#include "flags.h"  // bench/gpu/
#include "kernels/cuda/caching_device_memory.h"
#include "kernels/cuda/device.h"
#include "model/cuda/cuda_transformer.h"
#include "model/model_catalog.h"
#include "model/transformer.h"
#include "plan/flops.h"

using namespace parallm;

namespace {

struct Args {
  std::string model = "gpt2-124m-padded";
  int64_t batch = 16, seq = 1024, steps = 20, warmup = 3, profile_steps = 3;
  std::string precision = "bf16";
  double peak_tflops = 989.4;  // H100/H200 SXM dense bf16 (NVIDIA's datasheet)
};

Args parse(int argc, char** argv) {
  Args a;
  auto i64 = [](int64_t& x) { return [&x](const std::string& v) { x = std::stoll(v); }; };
  bench::parse_flags(
      argc, argv,
      {{"--model", [&](const std::string& v) { a.model = v; }},
       {"--batch", i64(a.batch)},
       {"--seq", i64(a.seq)},
       {"--steps", i64(a.steps)},
       {"--precision", [&](const std::string& v) { a.precision = v; }},
       {"--peak-tflops", [&](const std::string& v) { a.peak_tflops = std::stod(v); }},
       {"--profile-steps", i64(a.profile_steps)}},
      "bench/gpu/gpt2_train.cpp");
  PX_CHECK(a.precision == "bf16" || a.precision == "fp32", "--precision {}: bf16 or fp32",
           a.precision);
  return a;
}

}  // namespace

int main(int argc, char** argv) try {
  const Args a = parse(argc, argv);
  const int dev = cuda::select_device(0);
  ModelConfig cfg = catalog_model(a.model);
  Allocator host;
  Transformer init(cfg, host);
  init.params().init_random(1234);  // the CPU's counter-RNG initialisation
  cuda::CachingDeviceMemory device_memory;
  Allocator gpu(device_memory);
  CudaTransformer model(cfg, init.params(), gpu,
                        a.precision == "bf16" ? CudaPrecision::BF16 : CudaPrecision::F32, a.batch,
                        a.seq);
  const int64_t N = a.batch * a.seq;
  std::vector<int32_t> tokens(static_cast<size_t>(N + 1));
  uint64_t state = 12345;
  for (auto& t : tokens) {  // a fixed pseudo-random text: speed does not depend on it
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    t = static_cast<int32_t>((state >> 33) % 50257);
  }
  OptimizerConfig oc;
  oc.lr = 6e-4;
  double first_loss = 0, last_loss = 0, seconds = 0;
  int64_t step = 0;
  auto train_step = [&]() {
    model.zero_grads();
    double loss = model.forward_backward(tokens.data(), tokens.data() + 1, a.batch,
                                         1.0 / static_cast<double>(N)) /
                  static_cast<double>(N);
    model.clip_grad_norm(1.0);
    model.optimizer_step(oc, oc.lr, ++step);
    PX_CHECK(cudaStreamSynchronize(model.stream()) == cudaSuccess, "step {} failed", step);
    return loss;
  };
  for (int64_t s = 0; s < a.warmup + a.steps; ++s) {
    if (s == a.warmup) gpu.reset_peaks();
    auto t0 = std::chrono::steady_clock::now();
    const double loss = train_step();
    auto t1 = std::chrono::steady_clock::now();
    if (s == 0) first_loss = loss;
    last_loss = loss;
    if (s >= a.warmup) seconds += std::chrono::duration<double>(t1 - t0).count();
  }
  // Where a step's GPU time goes: a few more steps with an event per phase
  // (kept out of the timing above, since the events cost a little).
  std::string phases;
  if (a.profile_steps > 0) {
    model.set_profiling(true);
    model.take_profile();
    for (int64_t s = 0; s < a.profile_steps; ++s) train_step();
    double total = 0;
    const auto prof = model.take_profile();
    for (const auto& [name, ms] : prof) total += ms;
    for (const auto& [name, ms] : prof)
      phases += fmt::format("{}\"{}\": {:.3f}", phases.empty() ? "" : ", ", name,
                            ms / static_cast<double>(a.profile_steps));
    phases = fmt::format(", \"gpu_ms_per_step\": {:.2f}, \"phase_ms\": {{{}}}",
                         total / static_cast<double>(a.profile_steps), phases);
  }
  const double tok_s = static_cast<double>(N * a.steps) / seconds;
  const double tflops = tok_s * training_flops_per_token(cfg, a.seq) / 1e12;
  const MemStats ms = gpu.stats();
  std::string mem;
  for (size_t i = 0; i < kNumMemTags; ++i)
    mem += fmt::format("{}\"{}\": {}", i ? ", " : "", mem_tag_name(static_cast<MemTag>(i)),
                       ms.peak[i]);
  fmt::print(
      "{{\"bench\": \"gpt2_train\", \"impl\": \"parallm\", \"device\": \"{}\", \"model\": "
      "\"{}\", \"precision\": \"{}\", \"batch\": {}, \"seq\": {}, \"steps\": {}, "
      "\"ms_per_step\": {:.2f}, \"tokens_per_s\": {:.0f}, \"tflops\": {:.1f}, \"mfu\": {:.4f}, "
      "\"loss_first\": {:.4f}, \"loss_last\": {:.4f}, \"peak_bytes\": {{{}}}, "
      "\"peak_total\": {}{}}}\n",
      cuda::device_name(dev), a.model, a.precision, a.batch, a.seq, a.steps,
      1e3 * seconds / static_cast<double>(a.steps), tok_s, tflops, tflops / a.peak_tflops,
      first_loss, last_loss, mem, ms.total_peak, phases);
  return 0;
} catch (const std::exception& e) {
  fmt::print(stderr, "gpu_gpt2_train: {}\n", e.what());
  return 1;
}
