// Micro-benchmarks of the CPU kernels at GPT-2 124M shapes (N = B*T = 1024
// rows, C = 768, 4C = 3072, 3C = 2304). Linear layers report GFLOP/s
// (forward 2*N*IC*OC, backward twice that); memory-bound kernels report
// bytes/s. Run: build/bench/kernels_bench [--benchmark_filter=Linear].
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "base/rng.h"
#include "kernels/cpu/activation.h"
#include "kernels/cpu/cross_entropy.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/norm.h"
#include "kernels/cpu/optimizer.h"

namespace parallm::cpu {
namespace {

constexpr int64_t kRows = 1024, kC = 768;

std::vector<float> randn(int64_t n, const char* name, float scale = 1.0f) {
  const uint64_t key = stream_key(1234, name);
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = scale * static_cast<float>(normal_at(key, i));
  return v;
}

void set_gflops(benchmark::State& state, double flops) {
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_LinearForward(benchmark::State& state) {
  const int64_t ic = state.range(0), oc = state.range(1);
  auto inp = randn(kRows * ic, "inp"), w = randn(oc * ic, "w", 0.02f), b = randn(oc, "b");
  std::vector<float> out(kRows * oc);
  for (auto _ : state) {
    linear_forward(out.data(), inp.data(), w.data(), b.data(), kRows, ic, oc);
    benchmark::DoNotOptimize(out.data());
  }
  set_gflops(state, 2.0 * kRows * ic * oc);
}

void BM_LinearBackward(benchmark::State& state) {
  const int64_t ic = state.range(0), oc = state.range(1);
  auto inp = randn(kRows * ic, "inp"), w = randn(oc * ic, "w", 0.02f),
       dout = randn(kRows * oc, "d");
  std::vector<float> dinp(kRows * ic), dw(oc * ic), db(oc);
  for (auto _ : state) {
    linear_backward(dinp.data(), dw.data(), db.data(), dout.data(), inp.data(), w.data(), kRows, ic,
                    oc);
    benchmark::DoNotOptimize(dinp.data());
  }
  set_gflops(state, 4.0 * kRows * ic * oc);
}

// (IC, OC) of the four GPT-2 block linears: qkv, attention proj, fc, fc proj.
#define PX_GPT2_LINEARS Args({kC, 3 * kC})->Args({kC, kC})->Args({kC, 4 * kC})->Args({4 * kC, kC})
BENCHMARK(BM_LinearForward)->PX_GPT2_LINEARS->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_LinearBackward)->PX_GPT2_LINEARS->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_LayerNormForward(benchmark::State& state) {
  auto inp = randn(kRows * kC, "inp"), w = randn(kC, "w"), b = randn(kC, "b");
  std::vector<float> out(kRows * kC), mean(kRows), rstd(kRows);
  for (auto _ : state) {
    layernorm_forward(out.data(), mean.data(), rstd.data(), inp.data(), w.data(), b.data(), kRows,
                      kC, 1e-5);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(state.iterations() * 2 * kRows * kC * int64_t(sizeof(float)));
}
BENCHMARK(BM_LayerNormForward)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_LayerNormBackward(benchmark::State& state) {
  auto inp = randn(kRows * kC, "inp"), w = randn(kC, "w"), b = randn(kC, "b");
  auto dout = randn(kRows * kC, "d");
  std::vector<float> out(kRows * kC), mean(kRows), rstd(kRows);
  layernorm_forward(out.data(), mean.data(), rstd.data(), inp.data(), w.data(), b.data(), kRows, kC,
                    1e-5);
  std::vector<float> dinp(kRows * kC), dw(kC), db(kC);
  for (auto _ : state) {
    layernorm_backward(dinp.data(), dw.data(), db.data(), dout.data(), inp.data(), w.data(),
                       mean.data(), rstd.data(), kRows, kC);
    benchmark::DoNotOptimize(dinp.data());
  }
  state.SetBytesProcessed(state.iterations() * 3 * kRows * kC * int64_t(sizeof(float)));
}
BENCHMARK(BM_LayerNormBackward)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_GeluForward(benchmark::State& state) {
  const int64_t n = kRows * 4 * kC;
  auto inp = randn(n, "inp");
  std::vector<float> out(n);
  for (auto _ : state) {
    gelu_forward(out.data(), inp.data(), n);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(state.iterations() * 2 * n * int64_t(sizeof(float)));
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_GeluForward)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_GeluBackward(benchmark::State& state) {
  const int64_t n = kRows * 4 * kC;
  auto inp = randn(n, "inp"), dout = randn(n, "d");
  std::vector<float> dinp(n);
  for (auto _ : state) {
    gelu_backward(dinp.data(), inp.data(), dout.data(), n);
    benchmark::DoNotOptimize(dinp.data());
  }
  state.SetBytesProcessed(state.iterations() * 4 * n * int64_t(sizeof(float)));
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_GeluBackward)->Unit(benchmark::kMicrosecond)->UseRealTime();

// Softmax pieces over a 64-row chunk of GPT-2's 50257-token vocabulary.
void BM_CrossEntropyChunk(benchmark::State& state) {
  const int64_t n = 64, v = 50257;
  auto logits = randn(n * v, "logits", 3.0f);
  std::vector<float> work(logits), mx(n), se(n), lse(n), scale(n, 1.0f / n);
  std::vector<int32_t> targets(n);
  for (int64_t i = 0; i < n; ++i) targets[i] = static_cast<int32_t>((i * 7919) % v);
  for (auto _ : state) {
    ce_row_max(mx.data(), logits.data(), n, v);
    ce_row_sumexp(se.data(), logits.data(), mx.data(), n, v);
    for (int64_t i = 0; i < n; ++i) lse[i] = mx[i] + std::log(se[i]);
    std::copy(logits.begin(), logits.end(), work.begin());
    ce_softmax_grad_inplace(work.data(), lse.data(), targets.data(), scale.data(), n, v, 0);
    benchmark::DoNotOptimize(work.data());
  }
  state.SetItemsProcessed(state.iterations() * n * v);
}
BENCHMARK(BM_CrossEntropyChunk)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_AdamW(benchmark::State& state) {
  const int64_t n = 1 << 22;
  auto p = randn(n, "p"), g = randn(n, "g");
  std::vector<float> m(n, 0.0f), v(n, 0.0f);
  AdamWParams h{.lr = 1e-4, .weight_decay = 0.1};
  for (auto _ : state) {
    adamw_step(p.data(), g.data(), m.data(), v.data(), n, h);
    ++h.step;
    benchmark::DoNotOptimize(p.data());
  }
  state.SetBytesProcessed(state.iterations() * 7 * n * int64_t(sizeof(float)));
}
BENCHMARK(BM_AdamW)->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace
}  // namespace parallm::cpu
