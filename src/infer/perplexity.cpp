// Perplexity as llama-perplexity scores it (see perplexity.h).
#include "infer/perplexity.h"

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <iterator>
#include <vector>

#include "base/error.h"
#include "infer/model_text.h"
#include "nn/precision.h"
#include "ops/host_runtime.h"

namespace parallm {

std::string read_perplexity_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  PX_CHECK(f.good(), "cannot read text file '{}'", path);
  std::string text{std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
  if (!text.empty() && text.back() == '\n') text.pop_back();  // as llama.cpp's -f
  return text;
}

std::optional<int32_t> added_bos(const Tokenizer& tok) {
  const std::optional<int32_t> bos = tok.bos_id();
  if (!bos) return std::nullopt;
  // A text whose own first token cannot be the BOS: what comes before it
  // was added.
  const std::vector<int32_t> with = tok.encode("a", true), without = tok.encode("a", false);
  if (with.size() > without.size() && with.front() == *bos) return bos;
  return std::nullopt;
}

namespace {
// -log softmax(row)[target], in double (llama.cpp: a float max, a double sum).
double token_nll(const float* row, int64_t V, int32_t target) {
  const float mx = *std::max_element(row, row + V);
  double sum = 0;
  for (int64_t v = 0; v < V; ++v) sum += std::exp(static_cast<double>(row[v] - mx));
  return -(static_cast<double>(row[target] - mx) - std::log(sum));
}
}  // namespace

PerplexityResult perplexity(Transformer& model, std::span<const int32_t> tokens,
                            std::optional<int32_t> bos, const PerplexityOptions& o,
                            const std::function<void(int64_t, double)>& progress) {
  const int64_t ctx = o.ctx, n = static_cast<int64_t>(tokens.size());
  PX_CHECK(ctx >= 4, "--ctx must be at least 4 (half of each chunk is scored), got {}", ctx);
  PX_CHECK(n >= 2 * ctx,
           "the text has {} tokens; a perplexity with a context of {} needs at least {}", n, ctx,
           2 * ctx);
  const int64_t all_chunks = n / ctx;
  const int64_t chunks = o.chunks < 0 ? all_chunks : std::min(o.chunks, all_chunks);
  PX_CHECK(chunks >= 1, "--chunks must be at least 1, got {}", o.chunks);
  const int64_t V = model.config().vocab_size, first = ctx / 2;
  // Chunks per forward: batch_tokens of them, the logits under 512 MiB.
  const int64_t by_logits = (int64_t{512} << 20) / (ctx * V * int64_t{sizeof(float)});
  const int64_t per_batch =
      std::clamp(std::min(o.batch_tokens / ctx, by_logits), int64_t{1}, chunks);

  PerplexityResult r;
  r.text_tokens = n;
  double nll = 0, nll2 = 0;
  std::vector<int32_t> in;
  for (int64_t c0 = 0; c0 < chunks; c0 += per_batch) {
    const int64_t B = std::min(per_batch, chunks - c0);
    in.assign(tokens.begin() + c0 * ctx, tokens.begin() + (c0 + B) * ctx);
    if (bos)
      for (int64_t b = 0; b < B; ++b) in[static_cast<size_t>(b * ctx)] = *bos;
    const Tensor logits = model.logits(in.data(), B, ctx);  // (B, ctx, V)
    const float* l = logits.data<float>();
    for (int64_t b = 0; b < B; ++b) {
      // Targets are the text's tokens: a BOS put at position 0 is never one.
      const int32_t* chunk = tokens.data() + (c0 + b) * ctx;
      for (int64_t t = first; t < ctx - 1; ++t) {
        const double v = token_nll(l + (b * ctx + t) * V, V, chunk[t + 1]);
        nll += v;
        nll2 += v * v;
        ++r.tokens;
      }
    }
    r.chunks += B;
    if (progress) progress(r.chunks, std::exp(nll / static_cast<double>(r.tokens)));
  }
  const double count = static_cast<double>(r.tokens);
  r.mean_nll = nll / count;
  r.ppl = std::exp(r.mean_nll);
  const double var = nll2 / count - r.mean_nll * r.mean_nll;
  r.ppl_err = var > 0 && r.tokens > 1 ? std::sqrt(var / (count - 1)) * r.ppl : 0.0;
  return r;
}

PerplexityResult run_perplexity_job(const PerplexityJobOptions& o, std::ostream& out,
                                    std::ostream& err) {
  // Everything that needs no model is checked before it loads.
  const Precision precision = precision_from_name(o.dtype);
  PX_CHECK(precision != Precision::FP16, "--dtype must be fp32 or bf16, got {}", o.dtype);
  const std::string dir = tokenizer_dir(o.source, o.tokenizer);
  const std::unique_ptr<Tokenizer> tok = load_tokenizer_or_bytes(dir);
  const std::vector<int32_t> ids = tok->encode(read_perplexity_text(o.text_path), true);
  const std::optional<int32_t> bos = added_bos(*tok);
  PX_CHECK(static_cast<int64_t>(ids.size()) >= 2 * o.ppl.ctx,
           "{}: {} tokens; a perplexity with a context of {} needs at least {}", o.text_path,
           ids.size(), o.ppl.ctx, 2 * o.ppl.ctx);
  ops::set_host_threads(o.threads);
  InferenceModel im(o.source, {}, precision, nullptr);
  check_tokenizer_fits(*tok, dir, im.model().config().vocab_size);

  const auto t0 = std::chrono::steady_clock::now();
  const int64_t total = std::min<int64_t>(o.ppl.chunks < 0 ? INT64_MAX : o.ppl.chunks,
                                          static_cast<int64_t>(ids.size()) / o.ppl.ctx);
  err << fmt::format("perplexity: {} tokens, {} chunks of {} (BOS {}), {}", ids.size(), total,
                     o.ppl.ctx, bos ? fmt::format("{} first", *bos) : std::string("not added"),
                     o.dtype)
      << std::endl;
  const PerplexityResult r =
      perplexity(im.model(), ids, bos, o.ppl, [&](int64_t done, double ppl) {
        err << fmt::format("[{}/{}] {:.4f}", done, total, ppl) << std::endl;
      });
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  out << fmt::format("Final estimate: PPL = {:.4f} +/- {:.5f}", r.ppl, r.ppl_err) << "\n";
  out << nlohmann::json{{"ppl", r.ppl},
                        {"ppl_err", r.ppl_err},
                        {"mean_nll", r.mean_nll},
                        {"chunks", r.chunks},
                        {"ctx", o.ppl.ctx},
                        {"tokens", r.tokens},
                        {"text_tokens", r.text_tokens},
                        {"bos", bos ? nlohmann::json(*bos) : nlohmann::json(nullptr)},
                        {"dtype", o.dtype},
                        {"seconds", s}}
             .dump()
      << std::endl;
  return r;
}

}  // namespace parallm
