// StaticBatchEngine (see static_batch_engine.h).
#include "infer/serve/static_batch_engine.h"

#include <fmt/core.h>

#include <algorithm>
#include <iostream>

#include "base/error.h"
#include "infer/generator.h"

namespace parallm {

StaticBatchEngine::StaticBatchEngine(Transformer& model, Options opts)
    : model_(model), opts_(std::move(opts)) {
  PX_CHECK(opts_.max_running >= 1, "max_running must be >= 1, got {}", opts_.max_running);
  PX_CHECK(opts_.max_waiting >= 1, "max_waiting must be >= 1, got {}", opts_.max_waiting);
  thread_ = std::thread([this] { loop(); });
}

StaticBatchEngine::~StaticBatchEngine() { shutdown(false); }

void StaticBatchEngine::check(const SequenceRequest& r) const {
  const ModelConfig& cfg = model_.config();
  auto bad = [](const std::string& m) { throw SequenceRefused(RefusalKind::BadRequest, m); };
  const int64_t n = static_cast<int64_t>(r.prompt.size());
  if (n == 0) bad("the prompt is empty");
  if (r.grammar) bad("structured output needs --engine continuous");
  for (int32_t t : r.prompt)
    if (t < 0 || t >= cfg.vocab_size)
      bad(fmt::format("prompt token {} is outside the vocabulary ({})", t, cfg.vocab_size));
  if (r.max_new_tokens < 1)
    bad(fmt::format("max_new_tokens must be >= 1, got {}", r.max_new_tokens));
  if (r.max_new_tokens > cfg.max_positions - n)
    throw SequenceRefused(
        RefusalKind::TooLong,
        fmt::format("prompt ({} tokens) + max_new_tokens ({}) exceeds the model's context ({})", n,
                    r.max_new_tokens, cfg.max_positions));
  for (const std::string& s : r.stop_strings)
    if (s.empty()) bad("a stop string may not be empty");
  if (!r.stop_strings.empty() && !opts_.decode) bad("stop strings need the engine's decoder");
  try {
    r.sampling.validate();
  } catch (const Error& e) {
    bad(e.what());
  }
}

std::vector<uint64_t> StaticBatchEngine::submit_all(std::vector<Submission> subs) {
  std::vector<SequencePtr> seqs;
  for (Submission& sub : subs) {
    check(sub.req);
    auto s = std::make_shared<Sequence>();
    s->stops = StopStrings(sub.req.stop_strings);
    s->req = std::move(sub.req);
    s->sink = std::move(sub.sink);
    seqs.push_back(std::move(s));
  }
  std::vector<uint64_t> ids;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) throw SequenceRefused(RefusalKind::QueueFull, "the engine is shutting down");
    if (waiting_.size() + seqs.size() > static_cast<size_t>(opts_.max_waiting))
      throw SequenceRefused(RefusalKind::QueueFull,
                            fmt::format("{} sequences are waiting and this request adds {} "
                                        "(--max-waiting {})",
                                        waiting_.size(), seqs.size(), opts_.max_waiting));
    for (SequencePtr& s : seqs) {
      s->id = next_id_++;
      ids.push_back(s->id);
      waiting_.push_back(std::move(s));
    }
  }
  cv_.notify_all();
  return ids;
}

void StaticBatchEngine::cancel(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = waiting_.begin(); it != waiting_.end(); ++it)
    if ((*it)->id == id) {
      waiting_.erase(it);
      return;
    }
  for (const SequencePtr& s : running_)
    if (s->id == id) s->cancelled = true;  // leaves at its next token
}

EngineCounters StaticBatchEngine::counters() const {
  EngineCounters c;
  {
    std::lock_guard<std::mutex> lock(mu_);
    c.waiting = static_cast<int64_t>(waiting_.size());
    for (const SequencePtr& s : running_) c.running += s->done || s->cancelled ? 0 : 1;
  }
  c.prompt_tokens = prompt_tokens_;
  c.generated_tokens = generated_tokens_;
  return c;
}

void StaticBatchEngine::end_now(Sequence& s) {
  if (s.done.exchange(true) || s.cancelled) return;
  SequenceUpdate u;
  u.finished = true;
  u.finish = FinishReason::Length;
  u.prompt_tokens = static_cast<int64_t>(s.req.prompt.size());
  s.sink(u);
}

void StaticBatchEngine::shutdown(bool drain) {
  std::deque<SequencePtr> dropped;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    if (!drain) {
      cancel_all_ = true;
      dropped.swap(waiting_);
    }
  }
  cv_.notify_all();
  for (const SequencePtr& s : dropped) end_now(*s);
  std::call_once(joined_, [this] { thread_.join(); });
}

void StaticBatchEngine::loop() {
  for (;;) {
    std::vector<SequencePtr> batch;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !waiting_.empty(); });
      if (waiting_.empty()) return;  // stopping, nothing left to drain
      while (!waiting_.empty() && static_cast<int64_t>(batch.size()) < opts_.max_running) {
        batch.push_back(std::move(waiting_.front()));
        waiting_.pop_front();
      }
      running_ = batch;
    }
    try {
      run_batch(batch);
    } catch (const std::exception& e) {
      // Requests were checked at submit, so this is a fault of the engine:
      // say so, and end the batch's sequences rather than leave them hanging.
      std::cerr << "parallm serve: a batch failed: " << e.what() << std::endl;
    }
    for (const SequencePtr& s : batch) end_now(*s);  // no-op for those that ended
    std::lock_guard<std::mutex> lock(mu_);
    running_.clear();
  }
}

void StaticBatchEngine::on_token(Sequence& s, const SampledToken& t) {
  if (s.done || s.cancelled) return;
  ++generated_tokens_;
  s.tokens.push_back(t.token);
  SequenceUpdate u;
  u.tokens = {t};
  u.prompt_tokens = static_cast<int64_t>(s.req.prompt.size());
  u.finished = true;
  if (std::find(opts_.eos_ids.begin(), opts_.eos_ids.end(), t.token) != opts_.eos_ids.end()) {
    u.finish = FinishReason::Eos;
  } else if (StopStrings::Scan sc;
             !s.stops.empty() && (sc = s.stops.scan(opts_.decode(s.tokens))).stopped) {
    u.finish = FinishReason::Stop;
    u.text_end = sc.end;
  } else if (static_cast<int64_t>(s.tokens.size()) >= s.req.max_new_tokens || cancel_all_) {
    u.finish = FinishReason::Length;
  } else {
    u.finished = false;
  }
  s.done = u.finished;
  s.sink(u);
}

void StaticBatchEngine::run_batch(const std::vector<SequencePtr>& batch) {
  std::vector<std::vector<int32_t>> prompts;
  GenerateOptions o;
  o.eos_ids = opts_.eos_ids;
  o.hold_finished_rows = opts_.hold_finished_rows;
  o.kv_dtype = opts_.kv_dtype;
  for (const SequencePtr& s : batch) {
    prompts.push_back(s->req.prompt);
    o.sequence_sampling.push_back(s->req.sampling);
    o.draw_ids.push_back(s->req.choice);
    o.sequence_max_new_tokens.push_back(s->req.max_new_tokens);
    prompt_tokens_ += static_cast<int64_t>(s->req.prompt.size());
  }
  o.on_token = [&](int seq, const SampledToken& t) {
    on_token(*batch[static_cast<size_t>(seq)], t);
  };
  o.should_stop = [&](int seq) {
    const Sequence& s = *batch[static_cast<size_t>(seq)];
    return s.done || s.cancelled;
  };
  generate(model_, prompts, o);
}

}  // namespace parallm
