// Sampler::sample: the pipeline of sampling_transforms.h (see sampler.h).
#include "infer/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "base/rng.h"
#include "infer/sampling_transforms.h"

namespace parallm {

Sampler::Sampler(const SamplingParams& p)
    : p_(p), key_(stream_key(p.seed, "sampling")), accept_key_(stream_key(p.seed, "draft")) {
  p_.validate();
}

SampledToken Sampler::sample(std::span<const float> logits, std::span<const int32_t> prompt,
                             std::span<const int32_t> generated, int64_t sequence,
                             int64_t step, int32_t draft) const {
  SampledToken out;
  const bool penalties =
      p_.repetition_penalty != 1.0 || p_.presence_penalty != 0.0 || p_.frequency_penalty != 0.0;
  if (p_.greedy() && !penalties) {
    // Nothing edits the logits: no copy of the vocabulary-sized row.
    out.token = argmax(logits);
  } else {
    std::vector<float> l(logits.begin(), logits.end());
    if (p_.repetition_penalty != 1.0) {
      std::vector<int32_t> seen(prompt.begin(), prompt.end());
      seen.insert(seen.end(), generated.begin(), generated.end());
      apply_repetition_penalty(l, seen, p_.repetition_penalty);
    }
    apply_presence_frequency(l, generated, p_.presence_penalty, p_.frequency_penalty);
    if (p_.greedy()) {
      out.token = argmax(l);
    } else {
      apply_temperature(l, p_.temperature);
      mask_top_k(l, p_.top_k);
      mask_top_p(l, p_.top_p);
      mask_min_p(l, p_.min_p);
      const uint64_t index = (static_cast<uint64_t>(sequence) << 32) ^ static_cast<uint64_t>(step);
      if (draft >= 0 && static_cast<size_t>(draft) < l.size()) {
        const size_t d = static_cast<size_t>(draft);
        const double p_draft =
            std::isinf(l[d]) ? 0.0 : std::exp(static_cast<double>(l[d]) - log_sum_exp(l));
        if (uniform_at(accept_key_, index) < p_draft) {
          out.token = draft;
        } else {  // the residual max(0, p - q) with q one point: p without the draft
          l[d] = -std::numeric_limits<float>::infinity();
          out.token = sample_inverse_cdf(l, uniform_at(key_, index));
        }
      } else {
        out.token = sample_inverse_cdf(l, uniform_at(key_, index));
      }
    }
  }
  // The same value as log_softmax(logits)[token], without the (V) vector.
  out.logprob =
      p_.token_logprob || p_.logprobs > 0
          ? static_cast<double>(logits[static_cast<size_t>(out.token)]) - log_sum_exp(logits)
          : std::numeric_limits<double>::quiet_NaN();
  if (p_.logprobs > 0) {
    const std::vector<double> lp = log_softmax(logits);
    std::vector<int32_t> ids(lp.size());
    std::iota(ids.begin(), ids.end(), 0);
    const size_t n = std::min(ids.size(), static_cast<size_t>(p_.logprobs));
    std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(n), ids.end(),
                      [&](int32_t a, int32_t b) {
                        const double x = lp[static_cast<size_t>(a)], y = lp[static_cast<size_t>(b)];
                        return x > y || (x == y && a < b);
                      });
    for (size_t i = 0; i < n; ++i) out.top.push_back({ids[i], lp[static_cast<size_t>(ids[i])]});
  }
  return out;
}

}  // namespace parallm
