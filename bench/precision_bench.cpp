// Mixed precision and recomputation on this machine: one GPT-2-shaped model
// (default 6 layers, hidden 768, 12 heads, vocab 50304, B 4 x T 256) trained
// on random tokens (forward + backward + clip + AdamW per step), under each
// --precision (bf16 native when the CPU has AVX512-BF16, bf16 emulated,
// fp16 emulated) and each --recompute mode. Prints one JSON line per
// configuration: best wall and CPU ms per step, tokens/s (from the best step), the
// allocator's activation peak
// (MemTag::Activation) and total peak. bench/precision_bench.sh runs it and
// makes the tables of docs/mixed_precision.md and docs/recompute.md.
#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include <time.h>
#include <algorithm>

#include <chrono>
#include <cmath>
#include <memory>
#include <string>

#include "base/rng.h"
#include "kernels/cpu/threads.h"
#include "model/model_catalog.h"
#include "model/transformer.h"
#include "nn/matmul_precision.h"
#include "optim/adam.h"
#include "optim/grad_clip.h"

using namespace parallm;

namespace {
struct Opts {
  int64_t B = 4, T = 256, steps = 3, warmup = 1, layers = 6, hidden = 768, heads = 12;
  int64_t vocab = 50304;
  int64_t rounds = 2;  // every configuration runs once per round; best of rounds reported
};

nlohmann::json run(const Opts& o, const std::string& precision, bool emulate, Recompute rc) {
  ModelConfig cfg = gpt_shape(o.hidden, o.layers, o.heads, o.vocab, 1024);
  Allocator alloc;
  Transformer model(cfg, alloc);
  model.params().init_random(1);
  Adam opt(model.params(), OptimizerConfig{}, alloc);  // AdamW by default
  std::unique_ptr<MatmulPrecision> mp;
  const Precision p = precision_from_name(precision);
  if (p != Precision::FP32)
    mp = std::make_unique<MatmulPrecision>(p, model.params(), alloc, !emulate);
  model.set_compute(mp.get(), rc);
  std::vector<int32_t> in(o.B * o.T), tg(o.B * o.T);
  const uint64_t key = stream_key(3, "bench");
  for (int64_t i = 0; i < o.B * o.T; ++i) {
    in[i] = static_cast<int32_t>(uniform_at(key, i, 0) * o.vocab);
    tg[i] = static_cast<int32_t>(uniform_at(key, i, 1) * o.vocab);
  }
  // Process CPU time (all threads) per step beside wall time: on a shared
  // machine waiting for a core inflates wall time but not CPU time.
  auto cpu_ms = [] {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
  };
  std::vector<double> ms, cpu;
  double loss = 0;
  int64_t act_peak = 0, total_peak = 0;
  for (int64_t s = 0; s < o.warmup + o.steps; ++s) {
    alloc.reset_peaks();
    auto t0 = std::chrono::steady_clock::now();
    const double c0 = cpu_ms();
    if (mp) mp->invalidate();
    model.params().zero_grads();
    loss =
        model.forward_backward(in.data(), tg.data(), o.B, o.T, 1.0 / (o.B * o.T)).sum / (o.B * o.T);
    clip_grad_norm(model.params(), global_grad_norm(model.params()), 1.0);
    opt.step(model.params(), 1e-4);
    const double t =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (s >= o.warmup) {
      ms.push_back(t);
      cpu.push_back(cpu_ms() - c0);
    }
    act_peak = alloc.stats().peak[static_cast<size_t>(MemTag::Activation)];
    total_peak = alloc.stats().total_peak;
  }
  std::sort(ms.begin(), ms.end());
  std::sort(cpu.begin(), cpu.end());
  const double med = ms[ms.size() / 2], best = ms.front();
  static const char* kRc[] = {"none", "selective", "full"};
  return {{"precision", precision},
          {"gemm", mp ? mp->gemm().backend() : std::string("f32 dnnl_sgemm")},
          {"recompute", kRc[static_cast<int>(rc)]},
          {"step_ms_median", med},
          {"step_ms_best", best},
          {"step_cpu_ms_best", cpu.front()},
          {"tokens_per_s", static_cast<double>(o.B * o.T) / (best / 1e3)},
          {"activation_peak_bytes", act_peak},
          {"total_peak_bytes", total_peak},
          {"loss", loss},
          {"threads", cpu::num_threads()}};
}
}  // namespace

int main(int argc, char** argv) {
  Opts o;
  std::string only;  // "precision", "recompute" or empty for both
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    if (k == "--only") {
      only = argv[i + 1];
      continue;
    }
    const int64_t v = std::stoll(argv[i + 1]);
    if (k == "--batch")
      o.B = v;
    else if (k == "--seq")
      o.T = v;
    else if (k == "--steps")
      o.steps = v;
    else if (k == "--warmup")
      o.warmup = v;
    else if (k == "--layers")
      o.layers = v;
    else if (k == "--hidden")
      o.hidden = v;
    else if (k == "--heads")
      o.heads = v;
    else if (k == "--vocab")
      o.vocab = v;
    else if (k == "--rounds")
      o.rounds = v;
    else {
      fmt::print(stderr, "unknown option {}\n", k);
      return 2;
    }
  }
  cpu::set_num_threads(0);
  // Rounds interleave the configurations, so a burst of load on a shared
  // machine hits them alike; each line keeps its best round (load only ever
  // slows a run down).
  struct Config {
    std::string precision;
    bool emulate;
    Recompute rc;
  };
  std::vector<Config> configs;
  if (only.empty() || only == "precision")
    configs = {{"fp32", false, Recompute::None},
               {"bf16", false, Recompute::None},
               {"bf16", true, Recompute::None},
               {"fp16", false, Recompute::None}};
  if (only.empty() || only == "recompute")
    for (Recompute rc : {Recompute::Selective, Recompute::Full})
      configs.push_back({"fp32", false, rc});
  if (only == "recompute") configs.insert(configs.begin(), {"fp32", false, Recompute::None});
  std::vector<nlohmann::json> best(configs.size());
  for (int64_t r = 0; r < o.rounds; ++r)
    for (size_t i = 0; i < configs.size(); ++i) {
      nlohmann::json j = run(o, configs[i].precision, configs[i].emulate, configs[i].rc);
      if (best[i].is_null()) {
        best[i] = j;
        continue;
      }
      for (const char* k : {"step_ms_best", "step_cpu_ms_best"})
        best[i][k] = std::min(best[i][k].get<double>(), j[k].get<double>());
      best[i]["step_ms_median"] = j["step_ms_median"];  // the last round's
      best[i]["tokens_per_s"] =
          static_cast<double>(o.B * o.T) / (best[i]["step_ms_best"].get<double>() / 1e3);
    }
  for (const auto& j : best) fmt::print("{}\n", j.dump());
  return 0;
}
