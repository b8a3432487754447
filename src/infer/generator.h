// generate(): batched autoregressive generation through a KV cache. Token
// ids in, token ids out: every prompt gets its own cache blocks and its own
// positions (no padding, so a batch gives each prompt exactly the tokens it
// gets alone). All prompts are prefilled in one forward, then each step
// decodes one token of every unfinished sequence in one forward. Under
// tensor parallelism every tp rank runs the same calls; tp rank 0 samples
// and broadcasts the chosen ids, so all ranks agree. Under pipeline
// parallelism each stage runs its layers and sends the hidden rows on; the
// last stage samples and the ids go back to every stage. Text enters only
// through the decode callback (stop strings), so any tokenizer fits.
#pragma once
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "infer/sampler.h"
#include "infer/stop_strings.h"
#include "model/kv_cache/kv_dtype.h"
#include "model/transformer.h"

namespace parallm {

struct GenerateOptions {
  SamplingParams sampling;
  int64_t max_new_tokens = 16;
  // Generation of a sequence ends after one of these (an id outside the
  // vocabulary never comes, so it ends nothing).
  std::vector<int32_t> eos_ids;
  std::vector<std::string> stop_strings;  // ... or once its decoded text contains one
  // ids -> text; needed when stop_strings is not empty.
  std::function<std::string(std::span<const int32_t>)> decode;
  // Each new token of sequence `seq`, as it is chosen (on every rank).
  std::function<void(int seq, const SampledToken&)> on_token;
  // Tests: the logits (rows, V) of each forward; seqs[r] is row r's sequence.
  std::function<void(const std::vector<int>& seqs, const Tensor& logits)> on_logits;
  // The pipeline group of this rank's stage (null: the model is whole).
  comm::Communicator* pp = nullptr;
  // Serving, where one batch holds sequences of different requests: each
  // sequence's own sampling (empty: `sampling` for all), the id its draws
  // are keyed by (empty: its index in prompts) and its own limit (empty:
  // max_new_tokens for all; the cache holds the longest prompt + limit).
  std::vector<SamplingParams> sequence_sampling;
  std::vector<int64_t> draw_ids;
  std::vector<int64_t> sequence_max_new_tokens;
  // Asked after each token of a sequence that did not end otherwise; true:
  // the sequence leaves the batch now (finish Length; the caller knows why:
  // a cancel, its own stop rule). Every rank must answer the same.
  std::function<bool(int seq)> should_stop;
  // Static batching as transformers' generate() and FasterTransformer run
  // it (the baseline of Orca and vLLM): a sequence that ends keeps its row
  // in every forward, fed its last token, its outputs dropped, until the
  // batch's last sequence ends (or the row reaches the context). Tokens and
  // finishes are those of the sequences alone; only the work changes.
  bool hold_finished_rows = false;
  // What the KV cache stores keys and values in (f32, or 16 bits widened on read).
  KvDType kv_dtype = KvDType::F32;
  // Speculative decoding with prompt-lookup drafts (ngram_draft.h): each
  // decode step feeds a sequence's last token and up to this many drafted
  // ones, one position each, in one forward; the longest prefix of drafts
  // the target itself chooses is kept, with the target's next token, and
  // the cache of the rest is written over later. Greedy: the tokens of
  // plain decoding exactly; sampled: each draft accepted with its
  // probability (Sampler::sample), so the tokens' law is plain decoding's
  // (their draws differ). 0: off.
  int64_t ngram_draft_tokens = 0;
  // Speculative decoding with a draft model (draft_model.h) of the same
  // vocabulary, whole, needed on the sampling rank only (under tp/pp its
  // drafts reach the other ranks as the chosen ids do): each
  // step it proposes up to draft_model_tokens tokens per sequence, greedy
  // or drawn from its own transformed distribution q, verified as above;
  // sampled, a draft is accepted with min(1, p/q), else the token is drawn
  // from max(0, p - q), so the tokens' law is still plain decoding's.
  // Null or 0 tokens: off. Not with ngram_draft_tokens.
  Transformer* draft_model = nullptr;
  int64_t draft_model_tokens = 0;
};

enum class FinishReason { Eos, Stop, Length };
const char* finish_reason_name(FinishReason r);  // "eos", "stop", "length"

struct Generation {
  std::vector<int32_t> tokens;        // generated ids (an EOS id that ended it included)
  std::vector<SampledToken> samples;  // per token (logprobs on the sampling rank only)
  FinishReason finish = FinishReason::Length;
  size_t text_end = 0;  // Stop: length of the decoded text before the stop string
};

struct GenerationStats {
  int64_t prefill_tokens = 0, decode_tokens = 0;
  int64_t draft_tokens = 0, accepted_draft_tokens = 0;  // speculative decoding
  double prefill_s = 0.0, decode_s = 0.0;
};

// The rank that samples, and so holds logprobs and logits: tp rank 0 of
// the last pipeline stage.
bool is_sampling_rank(const Transformer& model);

// Throws, naming the values, on bad options or prompts (empty, ids outside
// the vocabulary, longer than max_positions, or prompt + max_new_tokens
// beyond it; no limit under dynamic NTK rope scaling) before any forward runs.
std::vector<Generation> generate(Transformer& model,
                                 const std::vector<std::vector<int32_t>>& prompts,
                                 const GenerateOptions& opt, GenerationStats* stats = nullptr);

}  // namespace parallm
