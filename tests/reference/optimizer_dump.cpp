// Optimizer reference dump: a small ParameterSet shaped like one transformer
// block plus an embedding (wide and tall block matrices, a norm, a bias),
// fixed synthetic gradients for a few steps under a warmup schedule, and the
// parameters each optimizer (sgd, momentum, momentum+nesterov, adam, adamw,
// muon) reaches; tests/reference/compare_optimizers.py replays the same
// gradients through torch.optim (and a float64 Muon reference) and compares.
// Usage: optimizer_dump OUT_DIR
#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

#include "base/rng.h"
#include "io/safetensors.h"
#include "optim/lr_schedule.h"
#include "optim/muon.h"
#include "optim/optimizer.h"

using namespace parallm;

namespace {

struct Case {
  std::string name;
  OptimizerConfig cfg;
};

void build(ParameterSet& ps) {
  ps.add({.name = "embed.weight", .shape = {50, 32}, .global_shape = {50, 32}});
  ps.add({.name = "layers.0.norm1.weight",
          .shape = {32},
          .global_shape = {32},
          .init = InitKind::Ones,
          .weight_decay = false});
  ps.add({.name = "layers.0.attn.q.weight",
          .shape = {48, 32},
          .global_shape = {48, 32}});  // tall (out > in)
  ps.add({.name = "layers.0.attn.q.bias",
          .shape = {48},
          .global_shape = {48},
          .init = InitKind::Zeros,
          .weight_decay = false});
  ps.add(
      {.name = "layers.0.mlp.down.weight", .shape = {32, 80}, .global_shape = {32, 80}});  // wide
  ps.add(
      {.name = "layers.0.mlp.fc.weight", .shape = {40, 40}, .global_shape = {40, 40}});  // square
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    fmt::print(stderr, "usage: optimizer_dump OUT_DIR\n");
    return 2;
  }
  const std::filesystem::path out = argv[1];
  std::filesystem::create_directories(out);
  const int steps = 4;
  LrSchedule sched{.lr = 1e-2, .warmup = 2, .total_steps = steps, .min_lr_ratio = 0.1};

  OptimizerConfig base;
  base.lr = sched.lr;  // the schedule scales it (and Muon's lr) per step
  base.beta1 = 0.9;
  base.beta2 = 0.95;
  base.eps = 1e-8;
  base.weight_decay = 0.1;
  base.momentum = 0.9;
  base.muon_momentum = 0.95;
  base.muon_ns_steps = 5;
  base.muon_lr = 2.0 * sched.lr;  // exactly twice the scheduled lr
  base.muon_weight_decay = 0.05;
  std::vector<Case> cases;
  for (auto [name, kind, nesterov] : {std::tuple{"sgd", OptimizerKind::SGD, false},
                                      std::tuple{"momentum", OptimizerKind::SGDMomentum, false},
                                      std::tuple{"nesterov", OptimizerKind::SGDMomentum, true},
                                      std::tuple{"adam", OptimizerKind::Adam, false},
                                      std::tuple{"adamw", OptimizerKind::AdamW, false},
                                      std::tuple{"muon", OptimizerKind::Muon, false}}) {
    OptimizerConfig c = base;
    c.kind = kind;
    c.nesterov = nesterov;
    cases.push_back({name, c});
  }

  std::vector<std::vector<float>> keep;
  SafetensorsWriter w;
  auto add = [&](const std::string& name, const std::vector<int64_t>& shape, const float* p,
                 int64_t n) {
    keep.emplace_back(p, p + n);
    w.add(name, DType::F32, shape, keep.back().data());
  };
  nlohmann::json params = nlohmann::json::array();
  bool first = true;
  for (const Case& c : cases) {
    Allocator alloc;
    ParameterSet ps;
    build(ps);
    ps.allocate(alloc);
    ps.init_random(3);
    for (int i = 0; i < ps.size(); ++i) {  // norms and biases away from 1 and 0
      if (ps.spec(i).weight_decay) continue;
      for (int64_t j = 0; j < ps.numel(i); ++j)
        ps.value({i})[j] += static_cast<float>(0.1 * normal_at(stream_key(5, ps.spec(i).name), j));
    }
    if (first) {
      for (int i = 0; i < ps.size(); ++i) {
        const ParamSpec& s = ps.spec(i);
        add("init." + s.name, s.shape, ps.value({i}), ps.numel(i));
        params.push_back({{"name", s.name},
                          {"weight_decay", s.weight_decay},
                          {"muon_matrix", Muon::is_matrix(s)}});
      }
    }
    auto opt = make_optimizer(c.cfg, ps, alloc, 0, ps.total_numel(), ps.total_numel());
    for (int s = 0; s < steps; ++s) {
      for (int i = 0; i < ps.size(); ++i) {
        // Gradients of mixed scale per tensor, different every step.
        const uint64_t key = stream_key(100 + s, ps.spec(i).name);
        const double scale = 0.01 * (1 + i);
        for (int64_t j = 0; j < ps.numel(i); ++j)
          ps.grad({i})[j] = static_cast<float>(scale * normal_at(key, j));
        if (first)
          add(fmt::format("grad.{}.{}", s, ps.spec(i).name), ps.spec(i).shape, ps.grad({i}),
              ps.numel(i));
      }
      opt->step(ps, sched.at(s));
    }
    for (int i = 0; i < ps.size(); ++i)
      add(c.name + "." + ps.spec(i).name, ps.spec(i).shape, ps.value({i}), ps.numel(i));
    first = false;
  }
  w.write((out / "optimizers.safetensors").string());
  nlohmann::json lrs = nlohmann::json::array();
  for (int s = 0; s < steps; ++s) lrs.push_back(sched.at(s));
  std::ofstream(out / "optimizers.json")
      << nlohmann::json{{"steps", steps},
                        {"lr", lrs},
                        {"params", params},
                        {"beta1", base.beta1},
                        {"beta2", base.beta2},
                        {"eps", base.eps},
                        {"weight_decay", base.weight_decay},
                        {"momentum", base.momentum},
                        {"muon_momentum", base.muon_momentum},
                        {"muon_ns_steps", base.muon_ns_steps},
                        {"muon_lr_ratio", base.muon_lr_ratio()},
                        {"muon_weight_decay", base.muon_weight_decay},
                        {"cases", {"sgd", "momentum", "nesterov", "adam", "adamw", "muon"}}}
             .dump(2);
  fmt::print("wrote {}\n", out.string());
  return 0;
}
