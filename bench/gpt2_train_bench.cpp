// End-to-end training throughput: a GPT-2 124M-shaped model (12 layers, 768
// hidden, 12 heads, vocab 50304, fp32) on random tokens, forward + backward +
// clip + AdamW per step. Prints one JSON line (tokens/s, median step ms, MFU
// against this machine's measured GEMM peak, or a GPU's --peak-tflops, and
// the allocator's peak bytes). bench/gpt2_vs_torch.sh runs it beside the
// PyTorch peer (bench/torch_gpt2_peer.py) with the same shapes; on a lent GPU
// (--device cuda --precision bf16, scripts/gpu-run.sh gpt2) the same model
// and step run there, beside bench/gpu/gpt2_torch.py.
#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>

#include "base/rng.h"
#include "device/cuda/open_job_device.h"
#include "kernels/cpu/threads.h"
#include "model/model_catalog.h"
#include "model/transformer.h"
#include "nn/matmul_precision.h"
#include "optim/adam.h"
#include "optim/grad_clip.h"
#include "ops/copy.h"
#include "plan/flops.h"
#include "train/config/training_config.h"

using namespace parallm;

int main(int argc, char** argv) {
  int64_t B = 4, T = 256, steps = 3, warmup = 1, layers = 12, hidden = 768, heads = 12;
  int64_t vocab = 50304;
  std::string device = "cpu", precision = "fp32";
  double peak_tflops = 0;  // 0: this machine's measured GEMM peak (a GPU needs --peak-tflops)
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    if (k == "--device" || k == "--precision" || k == "--peak-tflops") {
      (k == "--device" ? device : k == "--precision" ? precision : k) = argv[i + 1];
      if (k == "--peak-tflops") peak_tflops = std::stod(argv[i + 1]);
      continue;
    }
    int64_t v = std::stoll(argv[i + 1]);
    if (k == "--batch")
      B = v;
    else if (k == "--seq")
      T = v;
    else if (k == "--steps")
      steps = v;
    else if (k == "--warmup")
      warmup = v;
    else if (k == "--layers")
      layers = v;
    else if (k == "--hidden")
      hidden = v;
    else if (k == "--heads")
      heads = v;
    else if (k == "--vocab")
      vocab = v;
    else {
      fmt::print(stderr, "unknown option {}\n", k);
      return 2;
    }
  }
  cpu::set_num_threads(0);
  ModelConfig cfg = gpt_shape(hidden, layers, heads, vocab, 1024);
  const auto dev = open_job_device(device_from_name(device), nullptr, 0, false);
  Allocator alloc(dev->memory());
  Transformer model(cfg, alloc);
  model.params().init_random(1);
  Adam opt(model.params(), OptimizerConfig{}, alloc);  // AdamW by default
  const Precision p = precision_from_name(precision);
  std::unique_ptr<MatmulPrecision> lowp;
  if (p != Precision::FP32) lowp = std::make_unique<MatmulPrecision>(p, model.params(), alloc);
  model.set_compute(lowp.get(), Recompute::None);
  std::vector<int32_t> in(B * T), tg(B * T);
  uint64_t key = stream_key(3, "bench");
  for (int64_t i = 0; i < B * T; ++i) {
    in[i] = static_cast<int32_t>(uniform_at(key, i, 0) * vocab);
    tg[i] = static_cast<int32_t>(uniform_at(key, i, 1) * vocab);
  }
  std::vector<double> ms;
  double loss = 0;
  for (int64_t s = 0; s < warmup + steps; ++s) {
    auto t0 = std::chrono::steady_clock::now();
    model.params().zero_grads();
    loss = model.forward_backward(in.data(), tg.data(), B, T, 1.0 / (B * T)).sum / (B * T);
    clip_grad_norm(model.params(), global_grad_norm(model.params()), 1.0);
    opt.step(model.params(), 1e-4);
    if (lowp) lowp->invalidate();
    ops::synchronize(ops::Stream::of(alloc));  // a GPU's queue drains before the clock stops
    double t =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (s >= warmup) ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  double med = ms[ms.size() / 2];
  double tps = static_cast<double>(B * T) / (med / 1e3);
  double peak = peak_tflops > 0 ? peak_tflops * 1e12 : measure_gemm_peak_flops(p);
  double fpt = training_flops_per_token(cfg, T);
  nlohmann::json j = {{"impl", "parallm"},
                      {"device", dev->name().empty() ? device : dev->name()},
                      {"precision", precision},
                      {"batch", B},
                      {"seq", T},
                      {"tokens_per_s", tps},
                      {"step_ms_median", med},
                      {"threads", cpu::num_threads()},
                      {"params", cfg.num_parameters()},
                      {"loss", loss},
                      {"gemm_peak_gflops", peak / 1e9},
                      {"flops_per_token", fpt},
                      {"mfu", tps * fpt / peak},
                      {"peak_bytes", alloc.stats().total_peak}};
  fmt::print("{}\n", j.dump());
  return 0;
}
