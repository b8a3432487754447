// Perplexity of a text, scored as llama.cpp's llama-perplexity scores it
// (tools/perplexity, its default mode), so the two figures compare on one
// file: the whole text is encoded once (one trailing newline dropped, BOS
// added only when the tokenizer adds one), cut into floor(n / ctx) chunks of
// ctx tokens (the tail dropped), each chunk's first token replaced by the
// BOS when the tokenizer adds one, and each chunk run alone from position 0;
// only the second half is scored: the logits at positions ctx/2 .. ctx-2
// predict tokens ctx/2+1 .. ctx-1 (ctx - 1 - ctx/2 per chunk). The NLL is a
// log-softmax in double; the estimate is exp(mean NLL), its error
// llama.cpp's: ppl * sqrt((E[nll^2] - E[nll]^2) / (count - 1)).
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <span>
#include <string>

#include "data/tokenizer/tokenizer.h"
#include "infer/inference_model.h"
#include "model/transformer.h"

namespace parallm {

struct PerplexityOptions {
  int64_t ctx = 128;            // tokens per chunk (llama-perplexity -c)
  int64_t chunks = -1;          // at most this many chunks (< 0: every whole chunk)
  int64_t batch_tokens = 2048;  // chunks run together: batch_tokens / ctx (at least 1)
};

struct PerplexityResult {
  double ppl = 0, ppl_err = 0;  // exp(mean NLL) and llama.cpp's +/- estimate
  double mean_nll = 0;
  int64_t chunks = 0;       // chunks scored
  int64_t tokens = 0;       // tokens scored: chunks * (ctx - 1 - ctx/2)
  int64_t text_tokens = 0;  // tokens of the whole text
};

// The text of a file as llama-perplexity -f reads it: its bytes, one
// trailing '\n' dropped.
std::string read_perplexity_text(const std::string& path);

// tok's BOS when encode(text, true) puts it first (llama_vocab_get_add_bos),
// else nullopt.
std::optional<int32_t> added_bos(const Tokenizer& tok);

// Scores tokens (the whole text encoded) on the whole model; bos, when set,
// replaces each chunk's first token. progress, when set, is called after
// each batch of chunks with the chunks done and the perplexity so far.
// Throws when the text has fewer than 2 * ctx tokens (as llama.cpp refuses).
PerplexityResult perplexity(Transformer& model, std::span<const int32_t> tokens,
                            std::optional<int32_t> bos, const PerplexityOptions& o,
                            const std::function<void(int64_t, double)>& progress = {});

// `parallm perplexity`: the model and its tokenizer (tokenizer_dir's), the
// text of text_path, one process on the CPU.
struct PerplexityJobOptions {
  ModelSource source;
  std::string tokenizer;  // --tokenizer; "" the model's own
  std::string text_path;
  std::string dtype = "fp32";
  int threads = 0;
  PerplexityOptions ppl;
};

// Writes llama.cpp's "Final estimate: PPL = X +/- E" line and one JSON line
// to out, the running figures to err.
PerplexityResult run_perplexity_job(const PerplexityJobOptions& o, std::ostream& out,
                                    std::ostream& err);

}  // namespace parallm
