// Single-stream generation speed of parallm on a Hugging Face directory:
// one prompt of --prompt-len ids (the same ids as bench/infer_torch_peer.py),
// --new tokens greedy, batch 1, no EOS, through infer/generate() exactly as
// `parallm generate` runs it, fp32 or bf16 GEMMs. After an untimed warmup
// (first-touch pages, the bf16 weight copy, OpenMP pool), --reps runs; prints
// one JSON line with the median prefill and decode tokens/s and the bytes of
// GEMM weights one decode step reads (every linear + the LM head, at 4 bytes
// per element in fp32 and 2 in bf16, where the kernels read the bf16 copy).
// bench/infer_bench.sh runs it beside the transformers peer. --device cuda
// --batch B runs the same generation on a lent GPU (scripts/gpu-run.sh
// decode, beside bench/gpu/decode_torch.py): B copies of the prompt decoded
// together.
#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "device/cuda/open_job_device.h"
#include "infer/generator.h"
#include "infer/inference_model.h"
#include "kernels/cpu/threads.h"
#include "train/config/training_config.h"

using namespace parallm;

namespace {
struct Opts {
  std::string model, dtype = "fp32", device = "cpu";
  std::string kv_dtype = "f32";  // the KV cache's storage (f32, bf16, f16)
  std::string quantize;          // q8_0 | q4_0 | q4_k_m at load, or "" (as the model is)
  int threads = 2, reps = 3;
  int64_t prompt_len = 128, new_tokens = 128, batch = 1;
};

Opts parse(int argc, char** argv) {
  Opts o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--model")
      o.model = v;
    else if (a == "--dtype")
      o.dtype = v;
    else if (a == "--threads")
      o.threads = std::stoi(v);
    else if (a == "--reps")
      o.reps = std::stoi(v);
    else if (a == "--prompt-len")
      o.prompt_len = std::stoll(v);
    else if (a == "--new")
      o.new_tokens = std::stoll(v);
    else if (a == "--batch")
      o.batch = std::stoll(v);
    else if (a == "--device")
      o.device = v;
    else if (a == "--kv-dtype")
      o.kv_dtype = v;
    else if (a == "--quantize")
      o.quantize = v;
    else
      PX_CHECK(false, "infer_bench: unknown flag {}", a);
  }
  PX_CHECK(!o.model.empty(), "infer_bench: give --model HF_DIR | FILE.gguf");
  return o;
}

// Weight elements the GEMMs of one decode step read: q, k, v, o and the MLP
// of every layer, and the LM head (the tied embedding for GPT-2).
int64_t gemm_weight_elems(const ModelConfig& c) {
  const int64_t attn = c.hidden * (c.q_dim() + 2 * c.kv_dim()) + c.q_dim() * c.hidden;
  const int64_t mlp = (c.uses_swiglu() ? 3 : 2) * c.hidden * c.intermediate;
  return c.n_layers * (attn + mlp) + c.vocab_size * c.hidden;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
}  // namespace

int main(int argc, char** argv) {
  const Opts o = parse(argc, argv);
  cpu::set_num_threads(o.threads);
  const Precision p = precision_from_name(o.dtype);
  const auto dev = open_job_device(device_from_name(o.device), nullptr, 0, false);
  const InferenceModel::Placement where{.tp = {.on = &ops::Stream::of(dev->memory())},
                                       .memory = &dev->memory()};
  ModelSource src{.hf_dir = o.model, .quantize = o.quantize};
  select_gguf(src);  // a .gguf file (docs/gguf.md)
  InferenceModel im(src, where, p, nullptr);
  const ModelConfig& cfg = im.model().config();
  std::vector<int32_t> prompt(static_cast<size_t>(o.prompt_len));
  for (int64_t i = 0; i < o.prompt_len; ++i)  // as prompt_ids() in infer_torch_peer.py
    prompt[static_cast<size_t>(i)] = static_cast<int32_t>((1000 + 7919 * i) % cfg.vocab_size);
  GenerateOptions g;
  g.max_new_tokens = o.new_tokens;
  g.sampling.temperature = 0.0;  // greedy; no eos_ids: every run makes new_tokens
  g.kv_dtype = kv_dtype_from_name(o.kv_dtype);
  std::vector<double> prefill, decode;
  for (int r = 0; r <= o.reps; ++r) {
    GenerationStats st;
    const std::vector<std::vector<int32_t>> prompts(static_cast<size_t>(o.batch), prompt);
    const std::vector<Generation> out = generate(im.model(), prompts, g, &st);
    PX_CHECK(static_cast<int64_t>(out[0].tokens.size()) == o.new_tokens,
             "infer_bench: {} tokens generated, expected {}", out[0].tokens.size(), o.new_tokens);
    if (r == 0) continue;  // warmup
    prefill.push_back(static_cast<double>(st.prefill_tokens) / st.prefill_s);
    decode.push_back(static_cast<double>(st.decode_tokens) / st.decode_s);
  }
  const int64_t elems = gemm_weight_elems(cfg);
  const int64_t bytes = elems * (p == Precision::FP32 ? 4 : 2);
  std::vector<std::string> all;
  for (double d : decode) all.push_back(fmt::format("{:.2f}", d));
  fmt::print(
      "{{\"impl\": \"parallm\", \"device\": \"{}\", \"batch\": {}, \"dtype\": \"{}\", "
      "\"threads\": {}, \"prompt\": {}, \"new\": {}, \"kv_dtype\": \"{}\", "
      "\"prefill_tok_s\": {:.3f}, \"decode_tok_s\": {:.3f}, \"decode_tok_s_all\": [{}], "
      "\"gemm_weight_elems\": {}, \"weight_bytes_per_token\": {}}}\n",
      dev->name().empty() ? o.device : dev->name(), o.batch, o.dtype, cpu::num_threads(),
      o.prompt_len, o.new_tokens, o.kv_dtype, median(prefill), median(decode),
      fmt::join(all, ", "), elems, bytes);
  return 0;
}
