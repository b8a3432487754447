// Engine: what the HTTP layer of `parallm serve` talks to. It takes
// sequences (a prompt's token ids plus how to sample them) from any thread,
// generates them on its own thread, and reports each sequence's new tokens
// and its end through the sink given with it. The HTTP layer never sees the
// model, the KV cache or the ranks; two engines implement this: continuous
// batching over a paged KV cache (the server's) and static batching (a whole
// batch waits for its longest member; the benchmark's baseline).
#pragma once
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "infer/generator.h"
#include "infer/sampler.h"
#include "infer/structured/byte_grammar.h"

namespace parallm {

struct LoraFactorTable;  // nn/row_lora.h

// One sequence to generate. `choice` keys the sampling draws together with
// sampling.seed (the draw of step s is a function of (seed, choice, s)), so
// the n choices of one request differ and a seed reproduces each of them.
struct SequenceRequest {
  std::vector<int32_t> prompt;
  SamplingParams sampling;
  int64_t max_new_tokens = 16;
  std::vector<std::string> stop_strings;  // the engine decodes to find them
  int64_t choice = 0;
  // Structured output: every token keeps the text a prefix the grammar
  // accepts, and the sequence ends (finish Stop) once the grammar is
  // complete. null: unconstrained.
  std::shared_ptr<const structured::ByteGrammar> grammar;
  // A served LoRA adapter (infer/served_adapter.h; null: the base model),
  // held until the sequence ends, and the salt that keeps its prefix-cache
  // blocks apart from other adapters' (non-zero with an adapter).
  std::shared_ptr<const LoraFactorTable> lora;
  uint64_t prefix_salt = 0;
};

// What happened to one sequence since its last update. Tokens are in order;
// an EOS id that ended the sequence is among them (finish == Eos). When the
// sequence ended on a stop string, text_end is the length in bytes of its
// decoded text before the stop string; when it ended because its grammar
// was complete, text_end is npos (all of the text).
struct SequenceUpdate {
  std::vector<SampledToken> tokens;
  bool finished = false;
  FinishReason finish = FinishReason::Length;
  size_t text_end = 0;
  int64_t prompt_tokens = 0;         // of the sequence (usage)
  int64_t cached_prompt_tokens = 0;  // of them, read from the prefix cache
};

// Called on the engine's thread; must return quickly and never block on
// the engine (no submit/cancel from inside it).
using SequenceSink = std::function<void(const SequenceUpdate&)>;

// Why a sequence was refused; the HTTP layer maps these to status codes.
enum class RefusalKind { QueueFull, TooLong, BadRequest };
struct SequenceRefused : std::runtime_error {
  SequenceRefused(RefusalKind k, const std::string& what) : std::runtime_error(what), kind(k) {}
  RefusalKind kind;
};

struct EngineCounters {
  int64_t running = 0, waiting = 0;
  int64_t kv_blocks_used = 0, kv_blocks_total = 0;
  int64_t prompt_tokens = 0, generated_tokens = 0;          // totals since start
  int64_t prefix_cache_queries = 0, prefix_cache_hits = 0;  // prompt tokens looked up / found
  int64_t preemptions = 0;
  int64_t structured_steps = 0;    // tokens sampled under a grammar's mask
  int64_t structured_mask_us = 0;  // time spent computing those masks
  int64_t spec_draft_tokens = 0;     // speculative decoding: drafts verified
  int64_t spec_accepted_tokens = 0;  // of them, accepted (and kept)
};

// One sequence to queue and where its updates go.
struct Submission {
  SequenceRequest req;
  SequenceSink sink;
};

class Engine {
 public:
  virtual ~Engine() = default;
  // Queues the sequences of one request, all or none, and returns their ids
  // in order; throws SequenceRefused, before queueing any, when one cannot be
  // served or they do not all fit in the queue. All or none, because
  // sequences queued and then cancelled would hold queue places until the
  // engine's next step and refuse the requests that follow.
  virtual std::vector<uint64_t> submit_all(std::vector<Submission> seqs) = 0;
  // One sequence: submit_all of one.
  uint64_t submit(SequenceRequest req, SequenceSink sink) {
    std::vector<Submission> one;
    one.push_back({std::move(req), std::move(sink)});
    return submit_all(std::move(one)).front();
  }
  // The sequence leaves at the next step (its blocks are freed); its sink is
  // not called again. Unknown or finished ids are ignored.
  virtual void cancel(uint64_t id) = 0;
  virtual EngineCounters counters() const = 0;
  // Stops taking sequences; drain: finish the running and waiting ones,
  // else cancel them (their sinks get finished updates with finish Length).
  virtual void shutdown(bool drain) = 0;
};

}  // namespace parallm
