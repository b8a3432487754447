// SamplingParams: how the next token is chosen from a step's logits, with
// the conventions of the OpenAI API and llama.cpp (temperature 0 means
// greedy). validate() rejects impossible values before any work starts,
// with one message naming the parameter and the value.
#pragma once
#include <cstdint>

namespace parallm {

struct SamplingParams {
  double temperature = 1.0;         // 0: greedy (argmax, lowest id on ties)
  int64_t top_k = 0;                // keep the k most likely; 0: off
  double top_p = 1.0;               // nucleus: smallest set with mass >= top_p; 1: off
  double min_p = 0.0;               // keep p >= min_p * max p; 0: off
  double repetition_penalty = 1.0;  // HF/CTRL: prompt and generated ids; 1: off
  double presence_penalty = 0.0;    // OpenAI: - presence * [count > 0], generated ids
  double frequency_penalty = 0.0;   // OpenAI: - frequency * count, generated ids
  uint64_t seed = 0;                // the draws are a function of (seed, sequence, step)
  int logprobs = 0;                 // top alternatives reported per token; 0: none
  // The chosen token's log-probability costs a pass of exp over the whole
  // vocabulary (most of a greedy step's sampling time); false: skipped when
  // no alternatives are asked either, and SampledToken::logprob is NaN.
  bool token_logprob = true;
  bool greedy() const { return temperature == 0.0; }
  void validate() const;
};

}  // namespace parallm
