// Optimizer step time: one step of each optimizer (sgd, momentum, adam,
// adamw, muon) on a ParameterSet shaped like a GPT-2 (token embedding, and
// per block norms, q/k/v/o, fc/proj with biases), fixed gradients, median
// of `steps` steps after one warm-up. Prints one JSON object per optimizer;
// bench/optimizer_bench.sh runs PyTorch's peer (optimizer_torch_peer.py) on
// the same shapes in the same run and prints the ratios.
// Usage: optimizer_bench HIDDEN LAYERS VOCAB STEPS
#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "base/rng.h"
#include "optim/optimizer.h"

using namespace parallm;

int main(int argc, char** argv) {
  if (argc != 5) {
    fmt::print(stderr, "usage: optimizer_bench HIDDEN LAYERS VOCAB STEPS\n");
    return 2;
  }
  const int64_t C = std::stoll(argv[1]), L = std::stoll(argv[2]), V = std::stoll(argv[3]);
  const int steps = std::stoi(argv[4]);
  for (const char* name : {"sgd", "momentum", "adam", "adamw", "muon"}) {
    Allocator alloc;
    ParameterSet ps;
    auto add = [&](const std::string& n, std::vector<int64_t> shape, bool decay) {
      ps.add({.name = n, .shape = shape, .global_shape = shape, .weight_decay = decay});
    };
    add("embed.weight", {V, C}, true);
    for (int64_t l = 0; l < L; ++l) {
      const std::string p = fmt::format("layers.{}.", l);
      add(p + "norm1.weight", {C}, false);
      for (const char* m : {"attn.q", "attn.k", "attn.v", "attn.o"}) {
        add(p + m + ".weight", {C, C}, true);
        add(p + m + ".bias", {C}, false);
      }
      add(p + "norm2.weight", {C}, false);
      add(p + "mlp.fc.weight", {4 * C, C}, true);
      add(p + "mlp.fc.bias", {4 * C}, false);
      add(p + "mlp.proj.weight", {C, 4 * C}, true);
      add(p + "mlp.proj.bias", {C}, false);
    }
    ps.allocate(alloc);
    ps.init_random(1);
    float* g = ps.flat_grads().data<float>();
    for (int64_t i = 0; i < ps.total_numel(); ++i)
      g[i] = static_cast<float>(1e-2 * normal_at(5, i));
    OptimizerConfig cfg;
    cfg.kind = optimizer_from_name(name);
    auto opt = make_optimizer(cfg, ps, alloc, 0, ps.total_numel(), ps.total_numel());
    opt->step(ps, 1e-3);  // warm-up
    std::vector<double> ms;
    for (int s = 0; s < steps; ++s) {
      auto t0 = std::chrono::steady_clock::now();
      opt->step(ps, 1e-3);
      ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(ms.begin(), ms.end());
    fmt::print("{{\"optimizer\": \"{}\", \"params\": {}, \"ms\": {:.3f}}}\n", name,
               ps.total_numel(), ms[ms.size() / 2]);
  }
  return 0;
}
