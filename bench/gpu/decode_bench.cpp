// GPU generation speed: a GPT-2 (default the 124M model, HF's vocabulary, so
// bench/gpu/decode_torch.py runs the same shapes through transformers) with
// its KV cache on the device: B rows of a P-token prompt prefilled in one
// call, then N-1 greedy steps of one token a row (argmax on the device, B
// ids back per step). Prints one JSON line: prefill and decode tokens/s,
// milliseconds a decode step, and the step's bytes read (weights + the keys
// and values it attends to) over its time against the given HBM bandwidth.
//   gpu_decode_bench [--model NAME] [--batch B] [--prompt P] [--new N]
//                    [--precision bf16|fp32] [--repeats R] [--peak-gbps G]
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

using namespace parallm;

namespace {

struct Args {
  std::string model = "gpt2-124m";
  int64_t batch = 1, prompt = 128, new_tokens = 128, repeats = 5;
  std::string precision = "bf16";
  double peak_gbps = 4800;  // H200 HBM3e (NVIDIA's datasheet); H100 SXM: 3350
};

Args parse(int argc, char** argv) {
  Args a;
  auto i64 = [](int64_t& x) { return [&x](const std::string& v) { x = std::stoll(v); }; };
  bench::parse_flags(argc, argv,
                     {{"--model", [&](const std::string& v) { a.model = v; }},
                      {"--batch", i64(a.batch)},
                      {"--prompt", i64(a.prompt)},
                      {"--new", i64(a.new_tokens)},
                      {"--precision", [&](const std::string& v) { a.precision = v; }},
                      {"--repeats", i64(a.repeats)},
                      {"--peak-gbps", [&](const std::string& v) { a.peak_gbps = std::stod(v); }}},
                     "bench/gpu/decode_bench.cpp");
  PX_CHECK(a.precision == "bf16" || a.precision == "fp32", "--precision {}: bf16 or fp32",
           a.precision);
  PX_CHECK(a.new_tokens >= 2 && a.prompt >= 1 && a.repeats >= 1,
           "--new {} (>= 2), --prompt {} (>= 1), --repeats {} (>= 1)", a.new_tokens, a.prompt,
           a.repeats);
  return a;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) try {
  const Args a = parse(argc, argv);
  const int dev = cuda::select_device(0);
  const ModelConfig cfg = catalog_model(a.model);
  Allocator host;
  Transformer init(cfg, host);
  init.params().init_random(1234);
  cuda::CachingDeviceMemory device_memory;
  Allocator gpu(device_memory);
  const bool bf16 = a.precision == "bf16";
  const int64_t cap = a.prompt + a.new_tokens;
  CudaTransformer model(cfg, init.params(), gpu, bf16 ? CudaPrecision::BF16 : CudaPrecision::F32,
                        a.batch, cap);
  std::vector<int32_t> prompt(static_cast<size_t>(a.batch * a.prompt));
  uint64_t state = 12345;
  for (auto& t : prompt) {  // a fixed pseudo-random text: speed does not depend on it
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    t = static_cast<int32_t>((state >> 33) % static_cast<uint64_t>(cfg.vocab_size));
  }
  std::vector<int32_t> next(static_cast<size_t>(a.batch));
  std::vector<double> prefill_s, decode_s;
  std::vector<int32_t> first_run;  // the tokens of row 0, which every repeat should repeat
  bool same_tokens = true;
  for (int64_t r = 0; r <= a.repeats; ++r) {  // repeat 0 warms up (cuBLAS plans, the cache)
    auto t0 = std::chrono::steady_clock::now();
    model.greedy_cached(prompt.data(), a.batch, a.prompt, 0, next.data());
    const double p = seconds_since(t0);
    std::vector<int32_t> row0{next[0]};
    t0 = std::chrono::steady_clock::now();
    for (int64_t i = 1; i < a.new_tokens; ++i) {
      const std::vector<int32_t> in = next;
      model.greedy_cached(in.data(), a.batch, 1, a.prompt + i - 1, next.data());
      row0.push_back(next[0]);
    }
    const double d = seconds_since(t0);
    if (r == 0) {
      first_run = row0;
      continue;
    }
    same_tokens = same_tokens && row0 == first_run;
    prefill_s.push_back(p);
    decode_s.push_back(d);
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  const double pre = median(prefill_s), dec = median(decode_s);
  const double steps = static_cast<double>(a.new_tokens - 1);
  const double step_s = dec / steps;
  // Bytes one decode step reads: every weight matrix once (the GEMMs stream
  // them; biases and norms are noise) and each row's keys and values so far
  // (on average the prompt plus half the new tokens).
  const double elem = bf16 ? 2.0 : 4.0;
  const double weights = static_cast<double>(init.params().total_numel()) * elem;
  const double avg_len = static_cast<double>(a.prompt) + steps / 2.0;
  const double kv =
      2.0 * static_cast<double>(cfg.n_layers * a.batch * cfg.kv_dim()) * avg_len * elem;
  const double gbps = (weights + kv) / step_s / 1e9;
  std::string shown;
  for (size_t i = 0; i < std::min<size_t>(8, first_run.size()); ++i)
    shown += fmt::format("{}{}", i ? ", " : "", first_run[i]);
  fmt::print(
      "{{\"bench\": \"decode\", \"impl\": \"parallm\", \"device\": \"{}\", \"model\": \"{}\", "
      "\"precision\": \"{}\", \"batch\": {}, \"prompt\": {}, \"new\": {}, \"repeats\": {}, "
      "\"prefill_tokens_per_s\": {:.0f}, \"decode_tokens_per_s\": {:.0f}, "
      "\"ms_per_decode_step\": {:.3f}, \"decode_gbps\": {:.0f}, \"hbm_fraction\": {:.3f}, "
      "\"same_tokens_every_repeat\": {}, \"first_tokens\": [{}]}}\n",
      cuda::device_name(dev), a.model, a.precision, a.batch, a.prompt, a.new_tokens, a.repeats,
      static_cast<double>(a.batch * a.prompt) / pre, static_cast<double>(a.batch) * steps / dec,
      1e3 * step_s, gbps, gbps / a.peak_gbps, same_tokens, shown);
  return 0;
} catch (const std::exception& e) {
  fmt::print(stderr, "gpu_decode_bench: {}\n", e.what());
  return 1;
}
