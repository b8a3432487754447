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
  // draft >= 0: a speculative draft token, drawn from draft_q (V
  // probabilities: a draft model's distribution) or, when draft_q is
  // empty, proposed with certainty (a prompt-lookup draft, q one point).
  // Sampled decoding accepts it with probability min(1, p(draft) /
  // q(draft)) under the transformed distribution p, else draws from
  // max(0, p - q) renormalised, so the token's law is still p (speculative
  // sampling, Leviathan et al. 2023); the token is the draft exactly when
  // it was accepted. Greedy ignores both.
  SampledToken sample(std::span<const float> logits, std::span<const int32_t> prompt,
                      std::span<const int32_t> generated, int64_t sequence, int64_t step,
                      int32_t draft = -1, std::span<const float> draft_q = {}) const;
  // A draft model's side (temperature > 0 only): the distribution (V,
  // summing to 1) that sampled decoding draws from after the transforms,
  // and a draw from such a q on a stream of its own, keyed as sample()'s.
  std::vector<float> probabilities(std::span<const float> logits, std::span<const int32_t> prompt,
                                   std::span<const int32_t> generated) const;
  int32_t draw_draft(std::span<const float> q, int64_t sequence, int64_t step) const;

 private:
  // The logits after penalties, temperature and the masks (temperature > 0).
  std::vector<float> transformed(std::span<const float> logits, std::span<const int32_t> prompt,
                                 std::span<const int32_t> generated) const;

  SamplingParams p_;
  // The draw's stream, the draft test's, a draft model's draws.
  uint64_t key_ = 0, accept_key_ = 0, draft_key_ = 0;
};

}  // namespace parallm
