// verify_drafts: the sampling side of one sequence's speculative step. The
// target's logits rows follow the sequence's last token and each draft in
// turn; it chooses at row 0, 1, ... (Sampler::sample: greedy, or a draft
// accepted with min(1, p/q) and otherwise replaced by a draw from max(0,
// p - q)) while its choice is the draft there. Invariant: the result is
// the accepted drafts, then exactly one token of the target's own; greedy,
// exactly the tokens plain decoding would choose.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "infer/sampler.h"

namespace parallm {

// rows: (drafts.size() + 1, V) back to back. q: empty (prompt-lookup drafts,
// or greedy) or one distribution (V) per draft, the one it was drawn from.
// draw_id keys the draws (Sampler::sample's sequence).
std::vector<SampledToken> verify_drafts(const Sampler& sampler, const float* rows, int64_t V,
                                        std::span<const int32_t> prompt,
                                        std::span<const int32_t> generated,
                                        std::span<const int32_t> drafts,
                                        const std::vector<std::vector<float>>& q,
                                        int64_t draw_id);

}  // namespace parallm
