// ContinuousEngine: the server's engine. One thread runs steps: the
// scheduler plans every running sequence's next token plus chunks of
// waiting prompts under a token budget (continuous batching, chunked
// prefill, prefix reuse, preemption when blocks run out); the StepRunner
// runs that ragged batch over the paged KV cache on every rank; each
// sequence that wanted logits samples its token, and sinks hear of new
// tokens and ends. Sequences join and leave at every step.
// Invariant: once every sequence has left, every block is free again.
#pragma once
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <thread>

#include "infer/serve/engine.h"
#include "infer/serve/scheduler.h"
#include "infer/serve/speculative_step.h"
#include "infer/serve/step_runner.h"
#include "infer/stop_strings.h"
#include "infer/structured/token_vocabulary.h"
#include "nn/row_lora.h"

namespace parallm::serve {

struct ContinuousEngineOptions {
  SchedulerConfig scheduler;
  int64_t max_waiting = 256;  // queued sequences beyond which submit() refuses
  std::vector<int32_t> eos_ids;
  // ids -> text, for stop strings.
  std::function<std::string(std::span<const int32_t>)> decode;
  // The vocabulary's bytes and trie, for sequences with a grammar (null:
  // such sequences are refused).
  std::shared_ptr<const structured::TokenVocabulary> vocab;
  // Speculative decoding (speculative_step.h); sequences with a grammar
  // decode one token a step.
  SpeculativeConfig speculative;
};

class ContinuousEngine : public Engine {
 public:
  // runner: rank 0's; the engine allocates the blocks of its cache.
  ContinuousEngine(const ModelConfig& cfg, StepRunner& runner, ContinuousEngineOptions opts);
  ~ContinuousEngine() override;
  std::vector<uint64_t> submit_all(std::vector<Submission> seqs) override;
  void cancel(uint64_t id) override;
  EngineCounters counters() const override;
  void shutdown(bool drain) override;
  // Tests: whether every block is free (no sequence holds one).
  bool pool_whole() const;
  // The block allocator; read it only after shutdown (the engine thread owns it).
  const BlockPool& pool() const { return pool_; }

 private:
  struct Live;  // one sequence the engine thread owns
  // The sequence ready to queue; throws SequenceRefused when it never fits.
  std::unique_ptr<Live> admissible(Submission sub) const;
  void loop();
  void admit_incoming();  // engine thread; under mu_
  bool step();            // engine thread; false when there was nothing to run
  // The plan's rows grouped by their sequences' LoRA adapters (none: all base).
  std::optional<RowLoras> step_loras(const StepPlan& plan) const;
  void publish_locked();  // counters_ <- scheduler and pool; under mu_

  const ModelConfig cfg_;
  StepRunner& runner_;
  BlockPool pool_;
  ContinuousEngineOptions opts_;
  Scheduler sched_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::pair<uint64_t, std::unique_ptr<Live>>> incoming_;
  std::set<uint64_t> cancels_;
  uint64_t next_id_ = 1;
  bool stopping_ = false, drain_ = true;
  EngineCounters counters_;
  std::map<uint64_t, std::unique_ptr<Live>> live_;  // engine thread only
  std::thread thread_;
};

}  // namespace parallm::serve
