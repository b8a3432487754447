// Prompt-lookup drafts for speculative decoding (Saxena's "prompt lookup
// decoding"; vLLM's ngram speculator): text that repeats itself (code,
// quotes of the prompt, a model caught in a loop) is guessed by finding
// the latest earlier occurrence of the context's last n tokens and
// proposing what followed it. No model runs; the target verifies.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

namespace parallm {

// Up to k tokens: for n from max_n down to min_n, the context's last n
// tokens are searched for at an earlier start; the latest match with k
// tokens after it gives them, else the match with the most after it gives
// those. Empty when nothing matches or k <= 0.
std::vector<int32_t> ngram_draft(std::span<const int32_t> context, int64_t k, int max_n = 3,
                                 int min_n = 1);

}  // namespace parallm
