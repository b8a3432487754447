// The sampled-law check of speculative decoding (docs/testing.md): `runs`
// seeded generations at temperature 1, plain and with the drafts that
// `speculate` sets on the options; at each of `positions` tokens after the
// first, the two samples' counts pass the two-sample chi-square, and the
// drafts were proposed in most runs and both kept and cut.
#pragma once
#include <array>
#include <cstdio>
#include <functional>
#include <map>
#include <vector>

#include <gtest/gtest.h>

#include "common/chi_square.h"
#include "infer/generator.h"

namespace parallm::testing {

inline void expect_drafts_keep_the_law(Transformer& m, const std::vector<int32_t>& prompt,
                                       size_t positions,
                                       const std::function<void(GenerateOptions&)>& speculate,
                                       int runs = 400) {
  std::vector<std::map<int32_t, std::array<int, 2>>> at(positions);
  GenerationStats total;
  for (int spec = 0; spec < 2; ++spec)
    for (int seed = 0; seed < runs; ++seed) {
      GenerateOptions o;
      o.max_new_tokens = 6;
      o.sampling = {.temperature = 1.0, .seed = static_cast<uint64_t>(seed)};
      if (spec) speculate(o);
      GenerationStats st;
      const std::vector<Generation> g = generate(m, {prompt}, o, &st);
      for (size_t i = 0; i < at.size(); ++i) ++at[i][g[0].tokens.at(i + 1)][spec];
      total.draft_tokens += st.draft_tokens;
      total.accepted_draft_tokens += st.accepted_draft_tokens;
    }
  for (const auto& seen : at) {
    const auto [chi2, df] = two_sample_chi2(seen);
    ASSERT_GE(df, 1);
    EXPECT_LT(chi2, chi2_bound(df)) << df << " degrees of freedom";
    std::printf("chi2 %.2f, df %d (bound %.2f)\n", chi2, df, chi2_bound(df));
  }
  // Most runs drafted, and drafts were both kept and cut.
  EXPECT_GT(total.draft_tokens, runs);
  EXPECT_GT(total.accepted_draft_tokens, 0);
  EXPECT_LT(total.accepted_draft_tokens, total.draft_tokens);
  std::printf("drafts %lld, accepted %lld\n", static_cast<long long>(total.draft_tokens),
              static_cast<long long>(total.accepted_draft_tokens));
}

}  // namespace parallm::testing
