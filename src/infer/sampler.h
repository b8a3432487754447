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
  SampledToken sample(std::span<const float> logits, std::span<const int32_t> prompt,
                      std::span<const int32_t> generated, int64_t sequence, int64_t step) const;

 private:
  SamplingParams p_;
  uint64_t key_ = 0;
};

}  // namespace parallm
