// Sampler::sample: the pipeline of sampling_transforms.h (see sampler.h).
#include "infer/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "base/error.h"
#include "base/rng.h"
#include "infer/sampling_transforms.h"

namespace parallm {

Sampler::Sampler(const SamplingParams& p)
    : p_(p),
      key_(stream_key(p.seed, "sampling")),
      accept_key_(stream_key(p.seed, "draft")),
      draft_key_(stream_key(p.seed, "draft model")) {
  p_.validate();
}

namespace {

uint64_t draw_index(int64_t sequence, int64_t step) {
  return (static_cast<uint64_t>(sequence) << 32) ^ static_cast<uint64_t>(step);
}

// The id whose cumulative probability (in id order) first exceeds u * total.
int32_t inverse_cdf(std::span<const double> prob, double total, double u) {
  double cum = 0.0;
  int32_t last = 0;
  for (size_t i = 0; i < prob.size(); ++i) {
    if (prob[i] <= 0.0) continue;
    cum += prob[i];
    last = static_cast<int32_t>(i);
    if (u * total < cum) return last;
  }
  return last;  // rounding left cum just below u * total: the last id with mass
}

}  // namespace

std::vector<float> Sampler::transformed(std::span<const float> logits,
                                        std::span<const int32_t> prompt,
                                        std::span<const int32_t> generated) const {
  std::vector<float> l(logits.begin(), logits.end());
  if (p_.repetition_penalty != 1.0) {
    std::vector<int32_t> seen(prompt.begin(), prompt.end());
    seen.insert(seen.end(), generated.begin(), generated.end());
    apply_repetition_penalty(l, seen, p_.repetition_penalty);
  }
  apply_presence_frequency(l, generated, p_.presence_penalty, p_.frequency_penalty);
  if (p_.greedy()) return l;
  apply_temperature(l, p_.temperature);
  mask_top_k(l, p_.top_k);
  mask_top_p(l, p_.top_p);
  mask_min_p(l, p_.min_p);
  return l;
}

std::vector<float> Sampler::probabilities(std::span<const float> logits,
                                          std::span<const int32_t> prompt,
                                          std::span<const int32_t> generated) const {
  PX_CHECK(!p_.greedy(), "a draft distribution is drawn from only at temperature > 0");
  const std::vector<float> l = transformed(logits, prompt, generated);
  const double z = log_sum_exp(l);
  std::vector<float> q(l.size());
  for (size_t i = 0; i < l.size(); ++i)
    q[i] = std::isinf(l[i]) ? 0.0f : static_cast<float>(std::exp(static_cast<double>(l[i]) - z));
  return q;
}

int32_t Sampler::draw_draft(std::span<const float> q, int64_t sequence, int64_t step) const {
  const std::vector<double> prob(q.begin(), q.end());
  double total = 0.0;
  for (double v : prob) total += v;
  return inverse_cdf(prob, total, uniform_at(draft_key_, draw_index(sequence, step)));
}

SampledToken Sampler::sample(std::span<const float> logits, std::span<const int32_t> prompt,
                             std::span<const int32_t> generated, int64_t sequence,
                             int64_t step, int32_t draft,
                             std::span<const float> draft_q) const {
  SampledToken out;
  const bool penalties =
      p_.repetition_penalty != 1.0 || p_.presence_penalty != 0.0 || p_.frequency_penalty != 0.0;
  if (p_.greedy() && !penalties) {
    // Nothing edits the logits: no copy of the vocabulary-sized row.
    out.token = argmax(logits);
  } else if (p_.greedy()) {
    out.token = argmax(transformed(logits, prompt, generated));
  } else {
    std::vector<float> l = transformed(logits, prompt, generated);
    const uint64_t index = draw_index(sequence, step);
    if (draft >= 0 && static_cast<size_t>(draft) < l.size()) {
      const size_t d = static_cast<size_t>(draft);
      const double z = log_sum_exp(l);
      auto p_of = [&](size_t i) {
        return std::isinf(l[i]) ? 0.0 : std::exp(static_cast<double>(l[i]) - z);
      };
      // q(draft): 1 for a one-point draft.
      const double q_draft = draft_q.empty() ? 1.0 : static_cast<double>(draft_q[d]);
      if (q_draft > 0.0 && uniform_at(accept_key_, index) < p_of(d) / q_draft) {
        out.token = draft;
      } else if (draft_q.empty()) {  // the residual max(0, p - q), q one point: p without the draft
        l[d] = -std::numeric_limits<float>::infinity();
        out.token = sample_inverse_cdf(l, uniform_at(key_, index));
      } else {
        std::vector<double> residual(l.size());
        double total = 0.0;
        for (size_t i = 0; i < l.size(); ++i)
          total += residual[i] = std::max(0.0, p_of(i) - static_cast<double>(draft_q[i]));
        // p == q to rounding leaves no residual; a rejection then has
        // probability ~0, and p itself is the right law to fall back on.
        out.token = total > 0.0 ? inverse_cdf(residual, total, uniform_at(key_, index))
                                : sample_inverse_cdf(l, uniform_at(key_, index));
      }
    } else {
      out.token = sample_inverse_cdf(l, uniform_at(key_, index));
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
