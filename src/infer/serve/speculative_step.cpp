// add_step_drafts and step_rows (see speculative_step.h).
#include "infer/serve/speculative_step.h"

#include <algorithm>

#include "infer/ngram_draft.h"

namespace parallm::serve {

std::vector<std::vector<std::vector<float>>> add_step_drafts(
    const SpeculativeConfig& cfg, Scheduler& sched, StepPlan& plan,
    const std::function<DraftSeat(uint64_t id)>& seat) {
  std::vector<std::vector<std::vector<float>>> q(plan.seqs.size());
  if (!cfg.on()) return q;
  const int64_t k = cfg.ngram_tokens > 0 ? cfg.ngram_tokens : cfg.draft_tokens;
  std::vector<DraftModel::Request> asks;
  std::vector<size_t> ask_entry;
  for (size_t r = 0; r < plan.seqs.size(); ++r) {
    const ScheduledSeq& e = plan.seqs[r];
    if (!e.wants_logits) continue;
    const DraftSeat s = seat(e.id);
    if (s.sampler == nullptr) continue;
    const std::vector<int32_t>& all = sched.tokens(e.id);
    const size_t np = static_cast<size_t>(sched.prompt_tokens(e.id));
    // Drafts past what the sequence may generate would be cut by the
    // scheduler anyway; a draft model need not compute them.
    const int64_t room = std::min(k, sched.max_tokens(e.id) - static_cast<int64_t>(all.size()) - 1);
    if (room <= 0) continue;
    if (cfg.ngram_tokens > 0) {
      const std::vector<int32_t> d = ngram_draft(all, room);
      if (!d.empty()) sched.add_drafts(plan, r, d);
      continue;
    }
    asks.push_back({.id = e.id,
                    .prompt = std::span<const int32_t>(all.data(), np),
                    .generated = std::span<const int32_t>(all.data() + np, all.size() - np),
                    .k = room,
                    .sampler = s.sampler,
                    .draw_id = s.draw_id});
    ask_entry.push_back(r);
  }
  if (asks.empty()) return q;
  std::vector<DraftModel::Proposal> props = cfg.draft->propose(asks);
  for (size_t a = 0; a < asks.size(); ++a) {
    const size_t r = ask_entry[a];
    const int64_t kept = sched.add_drafts(plan, r, props[a].tokens);
    props[a].q.resize(std::min(props[a].q.size(), static_cast<size_t>(kept)));
    q[r] = std::move(props[a].q);
  }
  return q;
}

void cut_at_end(std::vector<SampledToken>& tokens, std::span<const int32_t> generated,
                int64_t max_new, std::span<const int32_t> eos_ids, const StopStrings& stops,
                const std::function<std::string(std::span<const int32_t>)>& decode) {
  std::vector<int32_t> gen(generated.begin(), generated.end());
  for (size_t i = 0; i + 1 < tokens.size(); ++i) {
    gen.push_back(tokens[i].token);
    const bool ends =
        std::find(eos_ids.begin(), eos_ids.end(), tokens[i].token) != eos_ids.end() ||
        static_cast<int64_t>(gen.size()) >= max_new || (!stops.empty() && stops.scan(decode(gen)).stopped);
    if (ends) {
      tokens.resize(i + 1);
      return;
    }
  }
}

StepRows step_rows(const StepPlan& plan) {
  StepRows out;
  size_t at = 0;  // into plan.tokens
  for (const ScheduledSeq& e : plan.seqs) {
    out.first_row.push_back(static_cast<int64_t>(out.spans.size()));
    out.tokens.insert(out.tokens.end(), plan.tokens.begin() + static_cast<std::ptrdiff_t>(at),
                      plan.tokens.begin() + static_cast<std::ptrdiff_t>(at + e.count));
    at += static_cast<size_t>(e.count);
    const int64_t end = e.pos0 + e.count;
    out.spans.push_back({e.pos0, e.count, e.blocks});
    for (size_t j = 0; j < e.drafts.size(); ++j) {
      out.tokens.push_back(e.drafts[j]);
      out.spans.push_back({end + static_cast<int64_t>(j), 1, e.blocks});
    }
  }
  return out;
}

}  // namespace parallm::serve
