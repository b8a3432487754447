// Reference dump: builds a tiny GPT-2 or LLaMA with odd sizes, saves it as an
// HF directory, runs one forward/backward and then a few AdamW steps (with
// warmup and clipping) on a fixed batch, and writes everything PyTorch must
// reproduce (tests/reference/compare_reference.py checks it). Cases beyond
// the two base models: a tied LLaMA, a LLaMA whose heads x head_dim is not
// the hidden size, and bf16 GEMMs (train.json says which precision).
// Usage: reference_dump CASE OUT_DIR   (CASE: see kCases)
#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "base/rng.h"
#include "common/test_models.h"
#include "io/hf_layout.h"
#include "io/hf_model.h"
#include "io/safetensors.h"
#include "nn/matmul_precision.h"
#include "optim/adam.h"
#include "optim/grad_clip.h"
#include "optim/lr_schedule.h"

using namespace parallm;

namespace {

struct Case {
  const char* name;
  bool gpt2;
  Precision precision;
};
constexpr Case kCases[] = {
    {"gpt2", true, Precision::FP32},        {"llama", false, Precision::FP32},
    {"llama_tied", false, Precision::FP32}, {"llama_head_dim", false, Precision::FP32},
    {"gpt2_bf16", true, Precision::BF16},   {"llama_bf16", false, Precision::BF16},
};

ModelConfig tiny(const std::string& name, bool gpt2) {
  ModelConfig c = gpt2 ? testing::tiny_gpt2() : testing::tiny_llama();
  c.init_std = 0.1;
  if (c.arch == Arch::LLaMA) c.rope_theta = 500.0;  // many rotation angles at short T
  // The token table is also the head: its gradient sums both uses.
  if (name == "llama_tied") c.tie_embeddings = true;
  // q and o project between hidden 72 and 6 x 16 = 96 (k, v: 2 x 16).
  if (name == "llama_head_dim") c.head_dim = 16;
  return c;
}

// Norm weights and biases start at 1 and 0; perturb them so their gradients
// and their effect on the forward are tested too.
void perturb_norms_and_biases(const ParameterSet& ps, uint64_t seed) {
  for (int i = 0; i < ps.size(); ++i) {
    if (ps.spec(i).weight_decay) continue;
    uint64_t key = stream_key(seed, ps.spec(i).name + "/perturb");
    float* v = ps.value({i});
    for (int64_t j = 0; j < ps.numel(i); ++j)
      v[j] += static_cast<float>(0.1 * normal_at(key, static_cast<uint64_t>(j)));
  }
}

struct Store {
  SafetensorsWriter w;
  std::vector<std::vector<float>> keep;
  void add(const std::string& name, std::vector<int64_t> shape, std::vector<float> data) {
    keep.push_back(std::move(data));
    w.add(name, DType::F32, std::move(shape), keep.back().data());
  }
  void add_hf(const ParameterSet& ps, const std::vector<HfTensor>& layout,
              const std::string& prefix, bool grads) {
    for (const auto& t : layout) {
      int64_t n = 1;
      for (int64_t d : t.shape) n *= d;
      std::vector<float> buf(static_cast<size_t>(n));
      gather_hf_tensor(ps, t, grads, buf.data());
      add(prefix + t.name, t.shape, std::move(buf));
    }
  }
};

}  // namespace

int main(int argc, char** argv) {
  const Case* kase = nullptr;
  for (const Case& k : kCases)
    if (argc == 3 && std::string(argv[1]) == k.name) kase = &k;
  if (kase == nullptr) {
    fmt::print(stderr, "usage: reference_dump CASE OUT_DIR; CASE one of:");
    for (const Case& k : kCases) fmt::print(stderr, " {}", k.name);
    fmt::print(stderr, "\n");
    return 2;
  }
  const std::filesystem::path out = argv[2];
  std::filesystem::create_directories(out);
  ModelConfig cfg = tiny(kase->name, kase->gpt2);
  Allocator alloc;
  Transformer model(cfg, alloc);
  model.params().init_random(7);
  perturb_norms_and_biases(model.params(), 7);
  save_hf_model((out / "model").string(), model, DType::F32);
  // bf16: GEMM operands rounded to bf16 at each GEMM, fp32 everywhere else,
  // the weights' copies refreshed after every update (docs/mixed_precision.md).
  std::unique_ptr<MatmulPrecision> matmul;
  if (kase->precision == Precision::BF16)
    matmul = std::make_unique<MatmulPrecision>(Precision::BF16, model.params(), alloc);
  model.set_compute(matmul.get(), Recompute::None);

  const int64_t B = 2, T = 17;
  std::vector<int32_t> tokens(B * T), targets(B * T);
  uint64_t key = stream_key(11, "batch");
  for (int64_t i = 0; i < B * T; ++i) {
    tokens[i] = static_cast<int32_t>(uniform_at(key, i, 0) * cfg.vocab_size);
    targets[i] = static_cast<int32_t>(uniform_at(key, i, 1) * cfg.vocab_size);
  }
  targets[3] = -1;  // ignored positions
  targets[B * T - 1] = -1;
  int64_t count = 0;
  for (int32_t t : targets) count += t >= 0;
  {
    SafetensorsWriter bw;
    bw.add("tokens", DType::I32, {B, T}, tokens.data());
    bw.add("targets", DType::I32, {B, T}, targets.data());
    bw.write((out / "batch.safetensors").string());
  }
  LrSchedule sched{.lr = 1e-2, .warmup = 2, .total_steps = 5, .min_lr_ratio = 0.1};
  // eps 1e-6 rather than 1e-8: GPT-2's key bias has an exactly zero gradient
  // (softmax ignores a per-row shift), so both sides hold fp32 rounding noise
  // (~1e-9) there, which eps 1e-8 would turn into lr-sized updates of random
  // sign; with 1e-6 the comparison measures the optimizer, not that noise.
  OptimizerConfig ac{.kind = OptimizerKind::AdamW,
                     .lr = sched.lr,
                     .beta1 = 0.9,
                     .beta2 = 0.95,
                     .eps = 1e-6,
                     .weight_decay = 0.1};
  const double clip = 0.5;
  const int steps = 5;
  std::ofstream(out / "train.json") << nlohmann::json{
      {"lr", sched.lr},
      {"warmup", sched.warmup},
      {"total_steps", sched.total_steps},
      {"min_lr_ratio", sched.min_lr_ratio},
      {"weight_decay", ac.weight_decay},
      {"beta1", ac.beta1},
      {"beta2", ac.beta2},
      {"eps", ac.eps},
      {"clip", clip},
      {"steps", steps},
      {"precision", kase->precision == Precision::BF16
                        ? "bf16"
                        : "fp32"}}.dump(2);

  Store st;
  auto layout = hf_layout(cfg);
  Tensor logits = model.logits(tokens.data(), B, T);
  st.add("logits", {B, T, cfg.vocab_size},
         std::vector<float>(logits.data<float>(), logits.data<float>() + logits.numel()));

  Adam opt(model.params(), ac, alloc);
  for (int s = 0; s < steps; ++s) {
    model.params().zero_grads();
    LossSum l = model.forward_backward(tokens.data(), targets.data(), B, T, 1.0 / count);
    float loss = static_cast<float>(l.sum / l.count);
    st.add(fmt::format("loss_at_step.{}", s), {}, {loss});
    if (s == 0) {
      st.add("loss", {}, {loss});
      st.add_hf(model.params(), layout, "grad.", true);
    }
    double norm = global_grad_norm(model.params());
    clip_grad_norm(model.params(), norm, clip);
    opt.step(model.params(), sched.at(s));
    if (matmul) matmul->invalidate();
  }
  st.add_hf(model.params(), layout, fmt::format("step{}.", steps), false);
  st.w.write((out / "parallm.safetensors").string());
  fmt::print("wrote {}\n", out.string());
  return 0;
}
