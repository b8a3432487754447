// One-process GPU training follows the CPU trajectory: the same GPT-2, the
// same counter-RNG initialisation and batches, 20 steps of forward,
// backward, global-norm clipping and AdamW; fp32 (TF32 off) losses and
// gradient norms within 1e-4 relative at every step, parameters close at
// the end. bf16 on the GPU tracks the fp32 CPU run within bf16's rounding.
// KV-cached generation gives the CPU's uncached logits.
#include <cmath>
#include <random>
#include <vector>

#include "common/gpu_test.h"
#include "kernels/cuda/caching_device_memory.h"
#include "model/cuda/cuda_transformer.h"
#include "model/transformer.h"
#include "optim/adam.h"
#include "optim/grad_clip.h"
#include "plan/memory_model.h"

namespace parallm {
namespace {

using CudaTransformerGpu = testing::GpuTest;

ModelConfig odd_gpt2() {
  ModelConfig c;
  c.vocab_size = 97;  // odd sizes everywhere: no tile or vector width divides them
  c.hidden = 48;
  c.n_layers = 2;
  c.n_heads = 3;
  c.n_kv_heads = 3;
  c.head_dim = 16;
  c.intermediate = 4 * 48;
  c.max_positions = 40;
  return c;
}

// LLaMA family: RMSNorm, RoPE, SwiGLU, grouped-query heads, untied head.
ModelConfig odd_llama() {
  ModelConfig c = odd_gpt2();
  c.arch = Arch::LLaMA;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.head_dim = 12;
  c.intermediate = 136;
  c.tie_embeddings = false;
  c.norm_eps = 1e-6;
  return c;
}

struct Trajectory {
  std::vector<double> loss, norm;
};

// Runs `steps` steps on the CPU and on the GPU from the same start.
void run_both(const ModelConfig& cfg, CudaPrecision precision, int64_t B, int64_t T, int steps,
              Trajectory& cpu_t, Trajectory& gpu_t, std::vector<float>& cpu_end,
              std::vector<float>& gpu_end) {
  Allocator host;
  Transformer cpu(cfg, host);
  cpu.params().init_random(1234);
  cuda::CachingDeviceMemory mem;
  Allocator dev(mem);
  CudaTransformer gpu(cfg, cpu.params(), dev, precision, B, T);
  OptimizerConfig oc;
  oc.lr = 3e-3;
  oc.weight_decay = 0.1;
  Adam opt(cpu.params(), oc, host);
  std::mt19937 rng(7);
  std::uniform_int_distribution<int32_t> tok(0, static_cast<int32_t>(cfg.vocab_size) - 1);
  const double scale = 1.0 / static_cast<double>(B * T);
  for (int s = 0; s < steps; ++s) {
    std::vector<int32_t> in(static_cast<size_t>(B * T)), tg(in.size());
    for (size_t i = 0; i < in.size(); ++i) {
      in[i] = tok(rng) % 13;  // a small alphabet, so the loss has something to learn
      tg[i] = (in[i] * 7 + 3) % static_cast<int32_t>(cfg.vocab_size);
    }
    tg[1] = -1;  // an ignored target
    cpu.params().zero_grads();
    cpu_t.loss.push_back(cpu.forward_backward(in.data(), tg.data(), B, T, scale).sum * scale);
    const double n = global_grad_norm(cpu.params());
    clip_grad_norm(cpu.params(), n, 1.0);
    cpu_t.norm.push_back(n);
    opt.step(cpu.params(), oc.lr);

    gpu.zero_grads();
    gpu_t.loss.push_back(gpu.forward_backward(in.data(), tg.data(), B, scale) * scale);
    gpu_t.norm.push_back(gpu.clip_grad_norm(1.0));
    gpu.optimizer_step(oc, oc.lr, s + 1);
  }
  const ParameterSet& ps = cpu.params();
  cpu_end.assign(ps.flat_values().data<float>(),
                 ps.flat_values().data<float>() + ps.total_numel());
  Allocator host2;
  Transformer back(cfg, host2);
  gpu.copy_values_to(back.params());
  gpu_end.assign(back.params().flat_values().data<float>(),
                 back.params().flat_values().data<float>() + ps.total_numel());
}

double rel(double a, double b) { return std::abs(a - b) / std::max(1e-12, std::abs(b)); }

void expect_same_trajectory(const ModelConfig& cfg) {
  Trajectory c, g;
  std::vector<float> pc, pg;
  run_both(cfg, CudaPrecision::F32, 3, 37, 20, c, g, pc, pg);
  for (size_t s = 0; s < c.loss.size(); ++s) {
    EXPECT_LT(rel(g.loss[s], c.loss[s]), 1e-4) << "step " << s << ": gpu " << g.loss[s]
                                               << " cpu " << c.loss[s];
    EXPECT_LT(rel(g.norm[s], c.norm[s]), 1e-4) << "step " << s << " grad norm";
  }
  EXPECT_LT(c.loss.back(), c.loss.front() - 0.5) << "the run should learn";
  double max_diff = 0;
  for (size_t i = 0; i < pc.size(); ++i) max_diff = std::max(max_diff, std::abs(double(pc[i]) - pg[i]));
  EXPECT_LT(max_diff, 1e-4) << "parameters after 20 steps";
}

TEST_F(CudaTransformerGpu, Fp32FollowsCpuTrajectoryFor20Steps) { expect_same_trajectory(odd_gpt2()); }

TEST_F(CudaTransformerGpu, LlamaFp32FollowsCpuTrajectoryFor20Steps) {
  expect_same_trajectory(odd_llama());
}

TEST_F(CudaTransformerGpu, Bf16TracksCpuWithinRounding) {
  Trajectory c, g;
  std::vector<float> pc, pg;
  run_both(odd_gpt2(), CudaPrecision::BF16, 2, 40, 20, c, g, pc, pg);
  for (size_t s = 0; s < c.loss.size(); ++s)
    EXPECT_LT(rel(g.loss[s], c.loss[s]), 2e-2) << "step " << s << ": gpu " << g.loss[s]
                                               << " cpu " << c.loss[s];
}

// The device allocator's bytes per tag after construction (everything is
// allocated up front) against `parallm memory --activations parallm-cuda`:
// parameters, gradients, optimizer states and activations exactly.
TEST_F(CudaTransformerGpu, AllocatorMatchesTheMemoryModel) {
  struct Case {
    ModelConfig cfg;
    CudaPrecision precision;
  };
  for (const Case& c : {Case{odd_gpt2(), CudaPrecision::F32}, Case{odd_gpt2(), CudaPrecision::BF16},
                        Case{odd_llama(), CudaPrecision::BF16}}) {
    Allocator host;
    Transformer cpu(c.cfg, host);
    cuda::CachingDeviceMemory mem;
    Allocator dev(mem);
    CudaTransformer gpu(c.cfg, cpu.params(), dev, c.precision, 3, 37);
    MemoryQuery q;
    q.model = c.cfg;
    q.seq_len = 37;
    q.micro_batch = 3;
    q.precision = c.precision == CudaPrecision::BF16 ? Precision::BF16 : Precision::FP32;
    q.activation_model = ActivationModel::ParallmCuda;
    const MemoryBreakdown r = estimate_memory(q);
    const std::string what = arch_name(c.cfg.arch) + (q.precision == Precision::BF16 ? " bf16" : " fp32");
    EXPECT_EQ(dev.current(MemTag::Parameter), r.parameters) << what;
    EXPECT_EQ(dev.current(MemTag::Gradient), r.gradients) << what;
    EXPECT_EQ(dev.current(MemTag::Optimizer), r.optimizer) << what;
    EXPECT_EQ(dev.current(MemTag::Activation), r.activations) << what;
  }
}

// KV-cached generation on the GPU against the CPU's uncached forward: two
// rows prefilled in two chunks (4 + 3 tokens), then one token a step fed
// the CPU's argmax; every call's logits equal the CPU's last-position
// logits of the whole sequence so far (fp32 1e-4 of the largest logit, bf16
// within its rounding), and greedy_cached on a fresh prompt at position 0
// (overwriting the first cache) picks the CPU's tokens.
void expect_cached_generation_matches_cpu(const ModelConfig& cfg, CudaPrecision precision,
                                          double tol) {
  Allocator host;
  Transformer cpu(cfg, host);
  cpu.params().init_random(1234);
  cuda::CachingDeviceMemory mem;
  Allocator dev(mem);
  const int64_t B = 2, V = cfg.vocab_size;
  CudaTransformer gpu(cfg, cpu.params(), dev, precision, B, cfg.max_positions);
  std::mt19937 rng(11);
  std::uniform_int_distribution<int32_t> tok(0, static_cast<int32_t>(V) - 1);
  std::vector<std::vector<int32_t>> seq(B);
  for (auto& r : seq)
    for (int i = 0; i < 7; ++i) r.push_back(tok(rng));
  // The CPU's logits after each row's first T tokens, and their argmax.
  auto cpu_last = [&](std::vector<int32_t>& best, int64_t T) {
    std::vector<int32_t> flat;
    for (const auto& r : seq) flat.insert(flat.end(), r.begin(), r.begin() + T);
    const Tensor full = cpu.logits(flat.data(), B, T);
    std::vector<float> last(static_cast<size_t>(B * V));
    best.assign(B, 0);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t i = 0; i < V; ++i) {
        const float x = full.data<float>()[(b * T + T - 1) * V + i];
        last[static_cast<size_t>(b * V + i)] = x;
        if (x > last[static_cast<size_t>(b * V + best[b])]) best[b] = static_cast<int32_t>(i);
      }
    return last;
  };
  auto feed = [&](int64_t from, int64_t n) {
    std::vector<int32_t> in;
    for (const auto& r : seq) in.insert(in.end(), r.begin() + from, r.begin() + from + n);
    return in;
  };
  std::vector<float> got(static_cast<size_t>(B * V));
  std::vector<int32_t> best;
  int64_t held = 0;
  for (int64_t n : {4, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}) {
    if (n == 1 && held == static_cast<int64_t>(seq[0].size()))
      for (int64_t b = 0; b < B; ++b) seq[b].push_back(best[b]);
    gpu.forward_cached(feed(held, n).data(), B, n, held, got.data());
    held += n;
    const std::vector<float> want = cpu_last(best, held);
    double err = 0, scale = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      err = std::max(err, std::abs(static_cast<double>(got[i]) - want[i]));
      scale = std::max(scale, std::abs(static_cast<double>(want[i])));
    }
    EXPECT_LE(err, tol * scale + 1e-6) << "after " << held << " tokens";
  }
  if (precision != CudaPrecision::F32) return;  // bf16 may break near-ties the other way
  for (auto& r : seq) r.resize(5);  // a new sequence: its first 5 tokens, from position 0
  std::vector<int32_t> next(B);
  gpu.greedy_cached(feed(0, 5).data(), B, 5, 0, next.data());
  for (int step = 0; step < 8; ++step) {
    const int64_t at = static_cast<int64_t>(seq[0].size());
    cpu_last(best, at);
    EXPECT_EQ(next, best) << "greedy step " << step;
    for (int64_t b = 0; b < B; ++b) seq[b].push_back(best[b]);
    gpu.greedy_cached(feed(at, 1).data(), B, 1, at, next.data());
  }
}

TEST_F(CudaTransformerGpu, CachedGenerationMatchesCpuForward) {
  expect_cached_generation_matches_cpu(odd_gpt2(), CudaPrecision::F32, 1e-4);
  expect_cached_generation_matches_cpu(odd_llama(), CudaPrecision::F32, 1e-4);
}

TEST_F(CudaTransformerGpu, Bf16CachedGenerationTracksCpuWithinRounding) {
  expect_cached_generation_matches_cpu(odd_gpt2(), CudaPrecision::BF16, 5e-2);
  expect_cached_generation_matches_cpu(odd_llama(), CudaPrecision::BF16, 5e-2);
}

TEST_F(CudaTransformerGpu, CachedGenerationRefusesBadCalls) {
  const ModelConfig cfg = odd_gpt2();
  Allocator host;
  Transformer cpu(cfg, host);
  cuda::CachingDeviceMemory mem;
  Allocator dev(mem);
  CudaTransformer gpu(cfg, cpu.params(), dev, CudaPrecision::F32, 2, 16);
  std::vector<int32_t> in(2 * 16, 1);
  std::vector<float> logits(2 * cfg.vocab_size);
  EXPECT_THROW(gpu.forward_cached(in.data(), 3, 1, 0, logits.data()), Error);   // rows
  EXPECT_THROW(gpu.forward_cached(in.data(), 1, 2, 15, logits.data()), Error);  // past the cache
  in[3] = static_cast<int32_t>(cfg.vocab_size);
  EXPECT_THROW(gpu.forward_cached(in.data(), 1, 4, 0, logits.data()), Error);  // token id
}

TEST_F(CudaTransformerGpu, RefusesWhatItCannotRun) {
  ModelConfig cfg = odd_gpt2();
  cfg.hidden_dropout = 0.1;
  Allocator host;
  Transformer cpu(cfg, host);
  cuda::CachingDeviceMemory mem;
  Allocator dev(mem);
  EXPECT_THROW(CudaTransformer(cfg, cpu.params(), dev, CudaPrecision::F32, 1, 8), Error);
  cfg.hidden_dropout = 0.0;
  EXPECT_THROW(CudaTransformer(cfg, cpu.params(), dev, CudaPrecision::F32, 1, 41), Error);
}

}  // namespace
}  // namespace parallm
