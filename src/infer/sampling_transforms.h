// The sampler's steps as pure functions on one sequence's logits (V), each
// with one published definition, so each is tested on hand-made logits.
// Masked ids are set to -inf; every mask keeps at least the most likely id.
// Ties are broken toward the lower id so results never depend on sort order.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

namespace parallm {

// HF RepetitionPenaltyLogitsProcessor (CTRL): each distinct id seen gets
// logit / penalty if positive, logit * penalty otherwise.
void apply_repetition_penalty(std::span<float> logits, std::span<const int32_t> seen,
                              double penalty);
// OpenAI: logit -= count * frequency + (count > 0) * presence, with counts
// of the generated ids.
void apply_presence_frequency(std::span<float> logits, std::span<const int32_t> generated,
                              double presence, double frequency);
void apply_temperature(std::span<float> logits, double temperature);
// Keep the k largest (k >= V or k == 0: all).
void mask_top_k(std::span<float> logits, int64_t k);
// Keep the smallest most-likely set whose probability reaches p.
void mask_top_p(std::span<float> logits, double p);
// Keep ids whose probability is >= min_p times the largest probability.
void mask_min_p(std::span<float> logits, double min_p);
int32_t argmax(std::span<const float> logits);
// log sum exp in double precision (max-shifted).
double log_sum_exp(std::span<const float> logits);
// log softmax in double precision: logit - log_sum_exp(logits).
std::vector<double> log_softmax(std::span<const float> logits);
// The id whose cumulative probability (in id order) first exceeds u in (0, 1).
int32_t sample_inverse_cdf(std::span<const float> logits, double u);

}  // namespace parallm
