// Scheduler: continuous batching for `parallm serve`, pure logic over a
// BlockPool. Each step() plans one forward: every running sequence's next
// token (decodes first, never starved), then chunks of partly prefilled
// prompts, then waiting prompts (FIFO, minus their prefix-cache hits), under
// a token budget and a running cap; when blocks run out the youngest running
// sequence is preempted and recomputed later. Single-threaded (the engine's).
// Invariant: a running sequence's block table holds exactly its computed
// positions plus those planned for the current step.
#pragma once
#include <cstdint>
#include <deque>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "model/kv_cache/block_pool.h"
#include "model/kv_cache/block_tables.h"

namespace parallm {

struct SchedulerConfig {
  int64_t max_batched_tokens = 2048;  // tokens per step, decodes and prefill chunks
  int64_t max_running = 256;          // sequences holding KV blocks at once
  bool prefix_cache = true;           // reuse and register full blocks by hash
  void validate() const;
};

// One sequence's part of a step: the model computes its tokens at positions
// pos0 .. pos0 + count - 1 (pos0 tokens are already in the cache), reading
// and writing keys through `blocks`.
struct ScheduledSeq {
  uint64_t id = 0;
  int64_t pos0 = 0;
  int64_t count = 0;
  // The last token's logits are sampled: the prompt (plus any tokens generated
  // before a preemption) is complete after this step, or the sequence decodes.
  bool wants_logits = false;
  // Set when the sequence was admitted this step: positions read from the
  // prefix cache instead of being computed.
  int64_t cached_tokens = 0;
  std::vector<BlockId> blocks;  // its block table, covering pos0 + count (+ drafts)
  // Speculative decoding (Scheduler::add_drafts): tokens drafted after the
  // last one, each computed at a position and a logits row of its own.
  std::vector<int32_t> drafts;
};

struct StepPlan {
  std::vector<ScheduledSeq> seqs;   // decodes, then running prefills, then admissions
  std::vector<int32_t> tokens;      // the seqs' tokens, concatenated in order
  std::vector<uint64_t> preempted;  // sent back to waiting this step
  bool empty() const { return seqs.empty(); }
  int64_t logits_rows() const;  // entries with wants_logits
};

struct SchedulerCounters {
  int64_t prefix_queries = 0;  // prompt tokens looked up at admissions
  int64_t prefix_hits = 0;     // of them, found in the cache
  int64_t preemptions = 0;
  int64_t computed_tokens = 0;  // positions computed by completed steps
};

class Scheduler {
 public:
  Scheduler(const SchedulerConfig& cfg, BlockPool& pool);
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Queues a sequence behind the waiting ones. Throws (queueing nothing) for
  // a known id, an empty prompt, max_new_tokens < 1, or a sequence whose
  // longest run, prompt + max_new_tokens - 1 positions, exceeds the pool.
  // prefix_salt (non-zero: a LoRA adapter's) keys its prefix-cache blocks
  // apart from every other salt's, whose keys and values differ.
  void add(uint64_t id, std::vector<int32_t> prompt, int64_t max_new_tokens,
           uint64_t prefix_salt = 0);
  // Plans the next forward and reserves its blocks. An empty plan means
  // nothing can run (nothing is queued).
  StepPlan step();
  // After the forward of step()'s plan: its positions are computed, full
  // blocks are registered in the prefix cache, and each entry that wanted
  // logits gets its sampled token appended (sampled holds one token per such
  // entry, in plan order). Entries of sequences removed since are skipped.
  void complete(const StepPlan& plan, std::span<const int32_t> sampled);
  // Speculative decoding. add_drafts: drafts to verify after the tokens of
  // plan.seqs[entry] (an entry that wants logits), at the next positions;
  // keeps as many as the sequence may still generate less one, the step's
  // token budget and the free blocks allow (it never preempts) and returns
  // that count. complete() with accepted[k]: how many of the k-th logits
  // entry's drafts the target accepted; they become computed positions and
  // tokens before sampled[k], and the slots of the rest are given back.
  int64_t add_drafts(StepPlan& plan, size_t entry, std::span<const int32_t> drafts);
  void complete(const StepPlan& plan, std::span<const int32_t> sampled,
                std::span<const int64_t> accepted);
  // The sequence leaves (finished or cancelled), waiting or running, and
  // its blocks are released. Returns whether it was known. Call it between
  // complete() and the next step().
  bool remove(uint64_t id);

  bool has(uint64_t id) const { return seqs_.contains(id); }
  int64_t running() const { return static_cast<int64_t>(running_.size()); }
  int64_t waiting() const { return static_cast<int64_t>(waiting_.size()); }
  bool idle() const { return seqs_.empty(); }
  // A sequence's tokens: its prompt, then what it generated.
  const std::vector<int32_t>& tokens(uint64_t id) const { return seq(id).tokens; }
  int64_t prompt_tokens(uint64_t id) const { return seq(id).prompt_len; }
  // Its prompt and every token it may generate: the most tokens it can hold.
  int64_t max_tokens(uint64_t id) const { return seq(id).max_len; }
  int64_t generated_tokens(uint64_t id) const;
  // Prompt positions read from the prefix cache at its first admission.
  int64_t cached_prompt_tokens(uint64_t id) const { return seq(id).first_hit; }
  const SchedulerCounters& counters() const { return counters_; }
  const BlockPool& pool() const { return tables_.pool(); }
  const SchedulerConfig& config() const { return cfg_; }

 private:
  struct Seq {
    std::vector<int32_t> tokens;
    int64_t prompt_len = 0, max_len = 0;
    int64_t computed = 0;          // positions whose keys are in the cache
    std::vector<uint64_t> hashes;  // chain hashes of its first full blocks
    uint64_t root = BlockPool::kRootHash;  // its first block's parent (salted)
    bool running = false, admitted_before = false;
    int64_t first_hit = 0;
  };
  const Seq& seq(uint64_t id) const;
  Seq& seq(uint64_t id) { return const_cast<Seq&>(std::as_const(*this).seq(id)); }
  struct Planning;  // one step's budget and entries
  int64_t reserve_running(uint64_t id, int64_t want, bool shrink, Planning& p);
  bool admit(uint64_t id, Planning& p);
  void preempt(uint64_t id, Planning& p);
  void register_full_blocks(uint64_t id, Seq& s);

  SchedulerConfig cfg_;
  BlockTables tables_;
  std::unordered_map<uint64_t, Seq> seqs_;
  std::deque<uint64_t> waiting_;
  std::vector<uint64_t> running_;  // in admission order: the youngest is last
  SchedulerCounters counters_;
};

}  // namespace parallm
