// verify_drafts (see draft_verify.h).
#include "infer/draft_verify.h"

namespace parallm {

std::vector<SampledToken> verify_drafts(const Sampler& sampler, const float* rows, int64_t V,
                                        std::span<const int32_t> prompt,
                                        std::span<const int32_t> generated,
                                        std::span<const int32_t> drafts,
                                        const std::vector<std::vector<float>>& q,
                                        int64_t draw_id) {
  std::vector<SampledToken> out;
  // The tokens so far and each confirmed draft after them: a row's
  // penalties and its draw's step see what plain decoding would.
  std::vector<int32_t> gen(generated.begin(), generated.end());
  for (size_t j = 0; j <= drafts.size(); ++j) {
    const int32_t draft = j < drafts.size() ? drafts[j] : -1;
    const std::span<const float> dq = j < q.size() ? std::span<const float>(q[j])
                                                   : std::span<const float>();
    out.push_back(sampler.sample({rows + static_cast<int64_t>(j) * V, static_cast<size_t>(V)},
                                 prompt, gen, draw_id, static_cast<int64_t>(gen.size()), draft,
                                 dq));
    if (out.back().token != draft) break;
    gen.push_back(draft);
  }
  return out;
}

}  // namespace parallm
