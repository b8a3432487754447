// The speculative-decoding flags (see speculative_flags.h).
#include "train/config/speculative_flags.h"

#include "base/error.h"
#include "io/gguf/quant_recipe.h"

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
       "accepted with min(1, p/q)); loaded whole on one rank (generate: the sampling rank; "
       "serve: rank 0) beside any tp/pp layout (docs/inference.md, docs/serving.md)"},
      {"--draft-quantize", "q8_0, q4_0 or q4_k_m (default: none)",
       "quantise the draft model's linear weights and LM head at load, as --quantize does the "
       "model's (vLLM's speculative_config quantization): a draft reads its weights k times a "
       "step, so its bytes bound the speed-up"},
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
  PX_CHECK(draft_quantize.empty() || !draft_model.empty(),
           "--draft-quantize {} needs --draft-model DIR", draft_quantize);
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
  sub->add_option_function<std::string>(
         d[2].flag,
         [&f](const std::string& v) {
           try {
             f.draft_quantize = quant_preset_name(quant_preset_from_name(v));
           } catch (const Error& e) {  // a parse error: CLI11 names the flag and exits 109
             throw CLI::ValidationError(e.what());
           }
         },
         d[2].help)
      ->type_name("q8_0|q4_0|q4_k_m");
  sub->add_option(d[3].flag, f.num_speculative_tokens, d[3].help)
      ->check(CLI::NonNegativeNumber);
}

}  // namespace parallm
