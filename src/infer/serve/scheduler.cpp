// Scheduler: one step's plan in three passes (decodes, running prefills,
// admissions), preemption of the youngest, and the bookkeeping after a
// forward (see scheduler.h).
#include "infer/serve/scheduler.h"

#include <algorithm>

#include "base/error.h"
#include "base/rng.h"

namespace parallm {

void SchedulerConfig::validate() const {
  PX_CHECK(max_batched_tokens >= 1, "max batched tokens must be at least 1, got {}",
           max_batched_tokens);
  PX_CHECK(max_running >= 1, "max running sequences must be at least 1, got {}", max_running);
  // Every running sequence must be able to decode in one step.
  PX_CHECK(max_running <= max_batched_tokens,
           "max running sequences ({}) exceeds max batched tokens ({}): not every running "
           "sequence could decode in one step",
           max_running, max_batched_tokens);
}

int64_t StepPlan::logits_rows() const {
  return std::count_if(seqs.begin(), seqs.end(),
                       [](const ScheduledSeq& s) { return s.wants_logits; });
}

struct Scheduler::Planning {
  int64_t budget;
  std::vector<ScheduledSeq> entries;
  std::vector<uint64_t> preempted;
};

Scheduler::Scheduler(const SchedulerConfig& cfg, BlockPool& pool) : cfg_(cfg), tables_(pool) {
  cfg_.validate();
}

const Scheduler::Seq& Scheduler::seq(uint64_t id) const {
  const auto it = seqs_.find(id);
  PX_CHECK(it != seqs_.end(), "unknown sequence {}", id);
  return it->second;
}

int64_t Scheduler::generated_tokens(uint64_t id) const {
  const Seq& s = seq(id);
  return static_cast<int64_t>(s.tokens.size()) - s.prompt_len;
}

void Scheduler::add(uint64_t id, std::vector<int32_t> prompt, int64_t max_new_tokens,
                    uint64_t prefix_salt) {
  PX_CHECK(!seqs_.contains(id), "sequence {} is already scheduled", id);
  PX_CHECK(!prompt.empty(), "sequence {} has an empty prompt", id);
  PX_CHECK(max_new_tokens >= 1, "sequence {}: max_new_tokens must be at least 1, got {}", id,
           max_new_tokens);
  const BlockPool& pool = tables_.pool();
  const int64_t n = static_cast<int64_t>(prompt.size());
  // The last generated token is never fed back, so its key is never stored.
  const int64_t positions = n + max_new_tokens - 1;
  const int64_t blocks = (positions + pool.block_size() - 1) / pool.block_size();
  PX_CHECK(blocks <= pool.total(),
           "sequence {} needs up to {} positions ({} prompt + {} new - 1) = {} KV blocks of {}, "
           "more than the whole cache ({} blocks)",
           id, positions, n, max_new_tokens, blocks, pool.block_size(), pool.total());
  Seq s;
  s.tokens = std::move(prompt);
  s.prompt_len = n;
  s.max_len = n + max_new_tokens;
  if (prefix_salt != 0) s.root = mix64(BlockPool::kRootHash ^ mix64(prefix_salt));
  seqs_.emplace(id, std::move(s));
  waiting_.push_back(id);
}

void Scheduler::preempt(uint64_t id, Planning& p) {
  Seq& s = seq(id);
  tables_.release(id);
  s.computed = 0;
  s.hashes.clear();
  s.running = false;
  running_.erase(std::find(running_.begin(), running_.end(), id));
  waiting_.push_front(id);
  const auto e = std::find_if(p.entries.begin(), p.entries.end(),
                              [&](const ScheduledSeq& x) { return x.id == id; });
  if (e != p.entries.end()) {
    p.budget += e->count;
    p.entries.erase(e);
  }
  p.preempted.push_back(id);
  ++counters_.preemptions;
}

// Reserves up to `want` positions of a running sequence, preempting the
// youngest running sequences while the pool is short (shrink: first take
// only what fits without preempting). Returns the count reserved; 0 when the
// budget is spent or the sequence itself was preempted.
int64_t Scheduler::reserve_running(uint64_t id, int64_t want, bool shrink, Planning& p) {
  const int64_t bs = tables_.pool().block_size();
  while (p.budget > 0) {
    int64_t n = std::min(want, p.budget);
    if (shrink) {
      const int64_t room = static_cast<int64_t>(tables_.table(id).size()) * bs - tables_.slots(id) +
                           tables_.pool().free_blocks() * bs;
      n = std::min(n, room);
    }
    if (n >= 1 && tables_.append_slots(id, n)) return n;
    const uint64_t victim = running_.back();
    preempt(victim, p);
    if (victim == id) return 0;
  }
  return 0;
}

// Admits the first waiting sequence when the caps and the pool allow its
// first chunk (admission never preempts). Returns whether it did.
bool Scheduler::admit(uint64_t id, Planning& p) {
  Seq& s = seq(id);
  BlockPool& pool = tables_.pool();
  const int64_t bs = pool.block_size(), len = static_cast<int64_t>(s.tokens.size());
  PrefixHit hit;
  // At least the last token is computed, so the step yields its logits.
  if (cfg_.prefix_cache) hit = pool.lookup(s.tokens, (len - 1) / bs, s.root);
  const int64_t cached = static_cast<int64_t>(hit.blocks.size()) * bs;
  const int64_t n = std::min(len - cached, p.budget);
  // Cached blocks nobody holds count as free until this sequence takes them.
  const int64_t reclaimed = std::count_if(hit.blocks.begin(), hit.blocks.end(),
                                          [&](BlockId b) { return pool.refcount(b) == 0; });
  if ((cached + n + bs - 1) / bs - static_cast<int64_t>(hit.blocks.size()) >
      pool.free_blocks() - reclaimed)
    return false;
  tables_.start(id, hit.blocks);
  PX_CHECK(tables_.append_slots(id, n), "internal: admission of sequence {} found no blocks", id);
  if (cfg_.prefix_cache) {
    counters_.prefix_queries += len;
    counters_.prefix_hits += cached;
  }
  if (!s.admitted_before) s.first_hit = std::min(cached, s.prompt_len);
  s.admitted_before = true;
  s.computed = cached;
  s.hashes = std::move(hit.hashes);
  s.running = true;
  running_.push_back(id);
  p.entries.push_back({id, cached, n, cached + n == len, cached, {}});
  p.budget -= n;
  return true;
}

StepPlan Scheduler::step() {
  Planning p{cfg_.max_batched_tokens, {}, {}};
  // Decodes first, then prompts still prefilling; both oldest first.
  for (const bool decodes : {true, false}) {
    const std::vector<uint64_t> order = running_;  // preemption edits running_
    for (uint64_t id : order) {
      const Seq& s = seq(id);
      const int64_t remaining = static_cast<int64_t>(s.tokens.size()) - s.computed;
      if (!s.running || (remaining == 1) != decodes) continue;
      const int64_t pos0 = s.computed;
      const int64_t n = reserve_running(id, remaining, !decodes, p);
      if (n == 0) continue;
      p.entries.push_back({id, pos0, n, pos0 + n == static_cast<int64_t>(s.tokens.size()), 0, {}});
      p.budget -= n;
    }
  }
  while (!waiting_.empty() && running() < cfg_.max_running && p.budget > 0) {
    if (!admit(waiting_.front(), p)) break;  // FIFO: nobody overtakes the head
    waiting_.pop_front();
  }
  StepPlan plan;
  plan.preempted = std::move(p.preempted);
  plan.seqs = std::move(p.entries);
  for (ScheduledSeq& e : plan.seqs) {
    const std::vector<BlockId>& t = tables_.table(e.id);
    const int64_t bs = tables_.pool().block_size();
    e.blocks.assign(t.begin(), t.begin() + (e.pos0 + e.count + bs - 1) / bs);
    const std::vector<int32_t>& toks = seq(e.id).tokens;
    plan.tokens.insert(plan.tokens.end(), toks.begin() + e.pos0, toks.begin() + e.pos0 + e.count);
  }
  return plan;
}

void Scheduler::register_full_blocks(uint64_t id, Seq& s) {
  BlockPool& pool = tables_.pool();
  const int64_t bs = pool.block_size();
  const std::vector<BlockId>& table = tables_.table(id);
  for (int64_t i = static_cast<int64_t>(s.hashes.size()); i < s.computed / bs; ++i) {
    const uint64_t parent = i == 0 ? s.root : s.hashes.back();
    s.hashes.push_back(
        pool.register_block(table[static_cast<size_t>(i)], parent,
                            std::span<const int32_t>(s.tokens).subspan(static_cast<size_t>(i * bs),
                                                                       static_cast<size_t>(bs))));
  }
}

int64_t Scheduler::add_drafts(StepPlan& plan, size_t entry, std::span<const int32_t> drafts) {
  ScheduledSeq& e = plan.seqs.at(entry);
  const Seq& s = seq(e.id);
  PX_CHECK(e.wants_logits && e.drafts.empty(),
           "sequence {}: drafts follow a step's last token, once", e.id);
  int64_t planned = static_cast<int64_t>(plan.tokens.size());
  for (const ScheduledSeq& x : plan.seqs) planned += static_cast<int64_t>(x.drafts.size());
  const int64_t end = e.pos0 + e.count;
  int64_t n = std::min({static_cast<int64_t>(drafts.size()),
                        s.max_len - static_cast<int64_t>(s.tokens.size()) - 1,
                        cfg_.max_batched_tokens - planned});
  while (n > 0 && !tables_.append_slots(e.id, n)) --n;  // what the free blocks hold
  if (n <= 0) return 0;
  e.drafts.assign(drafts.begin(), drafts.begin() + n);
  const std::vector<BlockId>& t = tables_.table(e.id);
  const int64_t bs = tables_.pool().block_size();
  e.blocks.assign(t.begin(), t.begin() + (end + n + bs - 1) / bs);
  return n;
}

void Scheduler::complete(const StepPlan& plan, std::span<const int32_t> sampled) {
  complete(plan, sampled, {});
}

void Scheduler::complete(const StepPlan& plan, std::span<const int32_t> sampled,
                         std::span<const int64_t> accepted) {
  PX_CHECK(static_cast<int64_t>(sampled.size()) == plan.logits_rows(),
           "step completed with {} sampled tokens for {} sequences that wanted logits",
           sampled.size(), plan.logits_rows());
  PX_CHECK(accepted.empty() || accepted.size() == sampled.size(),
           "step completed with {} accepted-draft counts for {} sampled tokens", accepted.size(),
           sampled.size());
  size_t k = 0;
  for (const ScheduledSeq& e : plan.seqs) {
    const int64_t taken = e.wants_logits && !accepted.empty() ? accepted[k] : 0;
    const int32_t token = e.wants_logits ? sampled[k++] : -1;
    const auto it = seqs_.find(e.id);
    if (it == seqs_.end() || !it->second.running) continue;  // removed since the plan
    Seq& s = it->second;
    PX_CHECK(s.computed == e.pos0 && tables_.slots(e.id) >= e.pos0 + e.count,
             "sequence {}: completing positions from {} but {} are computed (a stale plan?)", e.id,
             e.pos0, s.computed);
    PX_CHECK(taken >= 0 && taken <= static_cast<int64_t>(e.drafts.size()),
             "sequence {}: {} of its {} drafts accepted", e.id, taken, e.drafts.size());
    // Accepted drafts are tokens whose keys this step wrote; the rest of
    // the drafts' slots go back (their keys are written over later).
    s.tokens.insert(s.tokens.end(), e.drafts.begin(), e.drafts.begin() + taken);
    s.computed += e.count + taken;
    counters_.computed_tokens += e.count + taken;
    if (!e.drafts.empty()) tables_.truncate_slots(e.id, s.computed);
    if (cfg_.prefix_cache) register_full_blocks(e.id, s);
    if (e.wants_logits) {
      PX_CHECK(static_cast<int64_t>(s.tokens.size()) < s.max_len,
               "sequence {} already has its {} tokens; it should have been removed", e.id,
               s.max_len);
      s.tokens.push_back(token);
    }
  }
}

bool Scheduler::remove(uint64_t id) {
  const auto it = seqs_.find(id);
  if (it == seqs_.end()) return false;
  if (it->second.running) {
    tables_.release(id);
    running_.erase(std::find(running_.begin(), running_.end(), id));
  } else {
    waiting_.erase(std::find(waiting_.begin(), waiting_.end(), id));
  }
  seqs_.erase(it);
  return true;
}

}  // namespace parallm
