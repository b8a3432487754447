// The speculative-decoding flags of `parallm generate` and `parallm
// serve`, declared once: the commands add them with add_speculative_flags
// and `parallm settings` lists them from the same table (docs/settings.md).
// --num-speculative-tokens is vLLM's name for k, for either kind of draft;
// --ngram-draft N is the older spelling of prompt lookup with k = N.
// Invariant: resolve() gives at most one kind of draft a k > 0.
#pragma once
#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "train/config/inference_flags.h"

namespace parallm {

struct SpeculativeFlags {
  int64_t ngram_draft = 0;             // --ngram-draft N (0: off)
  std::string draft_model;             // --draft-model DIR ("" : none)
  std::string draft_quantize;          // --draft-quantize PRESET ("": its weights as they are)
  int64_t num_speculative_tokens = -1;  // --num-speculative-tokens K (-1: not given)

  // Tokens per step for each kind of draft (0: that kind is off).
  struct Resolved {
    int64_t ngram = 0, draft_model = 0;
  };
  // Throws, naming the flags, when they contradict each other.
  Resolved resolve() const;
};

// The flags, in the order the commands add them.
const std::vector<InferenceFlag>& speculative_flags();
void add_speculative_flags(CLI::App* sub, SpeculativeFlags& f);

}  // namespace parallm
