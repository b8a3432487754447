// The speculative-decoding flags (see speculative_flags.h).
#include "train/config/speculative_flags.h"

#include "base/error.h"

namespace parallm {

// With --draft-model and no --num-speculative-tokens: vLLM asks for k; 4
// is the k its examples and the bench use.
constexpr int64_t kDefaultDraftModelTokens = 4;

const std::vector<InferenceFlag>& speculative_flags() {
  static const std::vector<InferenceFlag> flags = {
      {"--ngram-draft", "N (default 0: off)",
       "speculative decoding with prompt-lookup drafts: up to N tokens a step, copied from "
       "where the context's last tokens occurred before, verified by the model in one forward "
       "(docs/inference.md)"},
      {"--draft-model", "a model directory or .gguf file (default: none)",
       "speculative decoding with a smaller draft model of the same vocabulary, proposing "
       "--num-speculative-tokens tokens a step (greedy, or drawn from its own distribution and "
       "accepted with min(1, p/q)); generate: one process; serve: loaded whole on rank 0 "
       "(docs/inference.md, docs/serving.md)"},
      {"--num-speculative-tokens", "K (default 4 with --draft-model)",
       "tokens drafted a step: the draft model's, or without --draft-model prompt lookup's (the "
       "same as --ngram-draft K)"},
  };
  return flags;
}

SpeculativeFlags::Resolved SpeculativeFlags::resolve() const {
  PX_CHECK(ngram_draft >= 0, "--ngram-draft must be >= 0, got {}", ngram_draft);
  PX_CHECK(num_speculative_tokens >= -1, "--num-speculative-tokens must be >= 0, got {}",
           num_speculative_tokens);
  PX_CHECK(draft_model.empty() || ngram_draft == 0,
           "--ngram-draft ({}) and --draft-model ({}) are two kinds of draft; give one",
           ngram_draft, draft_model);
  const bool k_given = num_speculative_tokens >= 0;
  if (!draft_model.empty())
    return {0, k_given ? num_speculative_tokens : kDefaultDraftModelTokens};
  PX_CHECK(!k_given || ngram_draft == 0 || ngram_draft == num_speculative_tokens,
           "--ngram-draft ({}) and --num-speculative-tokens ({}) disagree", ngram_draft,
           num_speculative_tokens);
  return {k_given ? num_speculative_tokens : ngram_draft, 0};
}

void add_speculative_flags(CLI::App* sub, SpeculativeFlags& f) {
  const std::vector<InferenceFlag>& d = speculative_flags();
  sub->add_option(d[0].flag, f.ngram_draft, d[0].help)->check(CLI::NonNegativeNumber);
  sub->add_option(d[1].flag, f.draft_model, d[1].help);
  sub->add_option(d[2].flag, f.num_speculative_tokens, d[2].help)
      ->check(CLI::NonNegativeNumber);
}

}  // namespace parallm
