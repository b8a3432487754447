// Speculative decoding in the continuous engine: before a step's forward,
// each sequence that may speculate (it wants logits and has no grammar)
// gets up to k drafts from prompt lookup or a draft model, added to the
// plan by the scheduler (which caps them by what the sequence may still
// generate, the token budget and the free blocks); step_rows then lays the
// plan out as the forward's tokens and spans, every draft a one-position
// span of its own so that it gets a logits row. Invariant: an entry's rows
// are contiguous, its last token's first, then its drafts in order.
#pragma once
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "infer/draft_model.h"
#include "infer/sampler.h"
#include "infer/serve/scheduler.h"
#include "infer/stop_strings.h"
#include "model/kv_cache/paged_kv_cache.h"

namespace parallm::serve {

struct SpeculativeConfig {
  int64_t ngram_tokens = 0;      // prompt-lookup drafts a step (0: off)
  DraftModel* draft = nullptr;   // or a draft model (rank 0's, whole) ...
  int64_t draft_tokens = 0;      // ... proposing this many a step
  bool on() const { return ngram_tokens > 0 || (draft != nullptr && draft_tokens > 0); }
};

// How a sequence speculates this step: its sampler and draw key (null
// sampler: it does not, e.g. under a grammar).
struct DraftSeat {
  const Sampler* sampler = nullptr;
  int64_t draw_id = 0;
};

// Proposes and adds the drafts; returns per plan entry the distributions
// the draft model drew its drafts from (empty unless sampled from a model).
std::vector<std::vector<std::vector<float>>> add_step_drafts(
    const SpeculativeConfig& cfg, Scheduler& sched, StepPlan& plan,
    const std::function<DraftSeat(uint64_t id)>& seat);

// A verified step's tokens (drafts kept, then the target's) cut after the
// first that ends the sequence: an EOS id, the one completing a stop
// string, or its max_new-th; the engine then finds the end as for one token.
void cut_at_end(std::vector<SampledToken>& tokens, std::span<const int32_t> generated,
                int64_t max_new, std::span<const int32_t> eos_ids, const StopStrings& stops,
                const std::function<std::string(std::span<const int32_t>)>& decode);

struct StepRows {
  std::vector<int32_t> tokens;
  std::vector<PagedSpan> spans;
  std::vector<int64_t> first_row;  // per plan entry: the row of its last token
};
StepRows step_rows(const StepPlan& plan);

}  // namespace parallm::serve
