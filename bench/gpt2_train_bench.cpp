// End-to-end training throughput: a GPT-2 124M-shaped model (12 layers, 768
// hidden, 12 heads, vocab 50304, fp32) on random tokens, forward + backward +
// clip + AdamW per step. Prints one JSON line (tokens/s, median step ms, MFU
// against this machine's measured GEMM peak). bench/gpt2_vs_torch.sh runs it
// beside the PyTorch peer (bench/torch_gpt2_peer.py) with the same shapes.
#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>

#include "base/rng.h"
#include "kernels/cpu/threads.h"
#include "model/model_catalog.h"
#include "model/transformer.h"
#include "optim/adam.h"
#include "optim/grad_clip.h"
#include "plan/flops.h"

using namespace parallm;

int main(int argc, char** argv) {
  int64_t B = 4, T = 256, steps = 3, warmup = 1, layers = 12, hidden = 768, heads = 12;
  int64_t vocab = 50304;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i];
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
  Allocator alloc;
  Transformer model(cfg, alloc);
  model.params().init_random(1);
  Adam opt(model.params(), OptimizerConfig{}, alloc);  // AdamW by default
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
    double t =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (s >= warmup) ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  double med = ms[ms.size() / 2];
  double tps = static_cast<double>(B * T) / (med / 1e3);
  double peak = measure_gemm_peak_flops();
  double fpt = training_flops_per_token(cfg, T);
  nlohmann::json j = {{"impl", "parallm"},
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
