// Sampler: one sequence's next token from its step logits, in the order of
// HF's generate: repetition penalty, presence/frequency penalties, then
// greedy argmax (temperature 0) or temperature, top-k, top-p, min-p and a
// draw. The draw's uniform number is the counter RNG at (seed, sequence,
// step), so a seed reproduces a run whatever the batch composition.
// Log-probabilities are of the model's distribution (the raw logits).
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "infer/sampling_params.h"

namespace parallm {

struct TokenLogprob {
  int32_t token = 0;
  double logprob = 0.0;
};

struct SampledToken {
  int32_t token = 0;
  double logprob = 0.0;           // of `token` under the raw logits
  std::vector<TokenLogprob> top;  // the params.logprobs most likely ids, best first
};

class Sampler {
 public:
  explicit Sampler(const SamplingParams& p);  // validates p
  const SamplingParams& params() const { return p_; }
  // logits: (V) of one sequence; prompt and generated: its tokens so far.
  // draft >= 0: a speculative draft token proposed with certainty (a
  // prompt-lookup draft). Sampled decoding accepts it with its probability
  // p(draft) under the transformed distribution, else draws from the rest
  // renormalised, so the token's law is still p (speculative sampling,
  // Leviathan et al. 2023, with a one-point draft distribution); the token
  // is the draft exactly when it was accepted. Greedy ignores it.
  SampledToken sample(std::span<const float> logits, std::span<const int32_t> prompt,
                      std::span<const int32_t> generated, int64_t sequence, int64_t step,
                      int32_t draft = -1) const;

 private:
  SamplingParams p_;
  uint64_t key_ = 0, accept_key_ = 0;  // the draw's stream, the draft test's
};

}  // namespace parallm
