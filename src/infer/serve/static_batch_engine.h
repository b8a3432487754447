// StaticBatchEngine: the static-batching Engine, the baseline the serving
// benchmark compares continuous batching against. Its thread takes up to
// max_running waiting sequences and runs them together through generate()
// (each its own sampling, draws keyed by its choice); no sequence joins a
// batch under way, so the batch waits for its longest member. Tokens reach
// the sinks as generate() chooses them; a sequence that ends (EOS, stop
// string, max_new_tokens) or is cancelled leaves the batch at the next step,
// or, with hold_finished_rows (`--engine static-padded`), keeps its row in
// every forward until the batch ends, as transformers' generate() does.
// Refuses (SequenceRefused) a sequence that cannot fit the model's context
// and any beyond max_waiting queued.
#pragma once
#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "infer/serve/engine.h"
#include "infer/stop_strings.h"
#include "model/kv_cache/kv_dtype.h"
#include "model/transformer.h"

namespace parallm {

class StaticBatchEngine : public Engine {
 public:
  struct Options {
    int64_t max_running = 8;   // sequences per batch
    int64_t max_waiting = 64;  // sequences queued; more are refused (QueueFull)
    std::vector<int32_t> eos_ids;
    // ids -> the bytes stop strings are found in (and SequenceUpdate::text_end counts).
    std::function<std::string(std::span<const int32_t>)> decode;
    bool hold_finished_rows = false;  // GenerateOptions::hold_finished_rows
    KvDType kv_dtype = KvDType::F32;  // GenerateOptions::kv_dtype
  };

  // model must outlive the engine; only the engine's thread runs it.
  StaticBatchEngine(Transformer& model, Options opts);
  ~StaticBatchEngine() override;  // shutdown(false)

  std::vector<uint64_t> submit_all(std::vector<Submission> seqs) override;
  void cancel(uint64_t id) override;
  EngineCounters counters() const override;
  void shutdown(bool drain) override;

 private:
  struct Sequence {
    uint64_t id = 0;
    SequenceRequest req;
    SequenceSink sink;
    StopStrings stops;
    std::vector<int32_t> tokens;
    std::atomic<bool> done{false};       // ended; its sink had its last update
    std::atomic<bool> cancelled{false};  // its sink is not called again
  };
  using SequencePtr = std::shared_ptr<Sequence>;

  void check(const SequenceRequest& req) const;
  void loop();
  void run_batch(const std::vector<SequencePtr>& batch);
  void on_token(Sequence& s, const SampledToken& t);
  // Ends s with finish Length and no new tokens (shutdown, a failed batch).
  void end_now(Sequence& s);

  Transformer& model_;
  Options opts_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<SequencePtr> waiting_;
  std::vector<SequencePtr> running_;
  uint64_t next_id_ = 1;
  bool stopping_ = false;                // no new sequences
  std::atomic<bool> cancel_all_{false};  // shutdown without drain
  std::atomic<int64_t> prompt_tokens_{0}, generated_tokens_{0};
  std::once_flag joined_;
  std::thread thread_;
};

}  // namespace parallm
