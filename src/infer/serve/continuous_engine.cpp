// ContinuousEngine (see continuous_engine.h). Only the engine thread
// touches the scheduler, the block pool and live_; other threads hand it
// work through incoming_ and cancels_ under mu_.
#include "infer/serve/continuous_engine.h"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <map>
#include <optional>

#include "base/error.h"
#include "infer/draft_verify.h"
#include "infer/structured/constrained_sequence.h"

namespace parallm::serve {

struct ContinuousEngine::Live {
  SequenceRequest req;
  SequenceSink sink;
  Sampler sampler;
  StopStrings stops;
  std::optional<structured::ConstrainedSequence> constraint;
  Live(SequenceRequest r, SequenceSink s,
       const std::shared_ptr<const structured::TokenVocabulary>& vocab)
      : req(std::move(r)), sink(std::move(s)), sampler(req.sampling), stops(req.stop_strings) {
    if (req.grammar) constraint.emplace(req.grammar, vocab);
  }
};

ContinuousEngine::ContinuousEngine(const ModelConfig& cfg, StepRunner& runner,
                                   ContinuousEngineOptions opts)
    : cfg_(cfg),
      runner_(runner),
      pool_(runner.cache().num_blocks(), runner.cache().block_size()),
      opts_(std::move(opts)),
      sched_(opts_.scheduler, pool_) {
  PX_CHECK(opts_.max_waiting >= 1, "max waiting sequences must be at least 1, got {}",
           opts_.max_waiting);
  counters_.kv_blocks_total = pool_.total();
  thread_ = std::thread([this] { loop(); });
}

ContinuousEngine::~ContinuousEngine() { shutdown(false); }

std::unique_ptr<ContinuousEngine::Live> ContinuousEngine::admissible(Submission sub) const {
  const SequenceRequest& req = sub.req;
  const int64_t n = static_cast<int64_t>(req.prompt.size());
  auto refuse = [](RefusalKind k, const std::string& what) { throw SequenceRefused(k, what); };
  if (n == 0) refuse(RefusalKind::BadRequest, "the prompt is empty");
  for (int32_t t : req.prompt)
    if (t < 0 || t >= cfg_.vocab_size)
      refuse(RefusalKind::BadRequest,
             fmt::format("prompt token {} is outside the vocabulary ({})", t, cfg_.vocab_size));
  if (req.max_new_tokens < 1)
    refuse(RefusalKind::BadRequest,
           fmt::format("max_tokens must be at least 1, got {}", req.max_new_tokens));
  if (n + req.max_new_tokens > cfg_.max_positions)
    refuse(RefusalKind::TooLong,
           fmt::format("this model's maximum context length is {} tokens; the prompt has {} and "
                       "{} more were requested ({} in all)",
                       cfg_.max_positions, n, req.max_new_tokens, n + req.max_new_tokens));
  const int64_t bs = pool_.block_size();
  const int64_t blocks = (n + req.max_new_tokens - 1 + bs - 1) / bs;
  if (blocks > pool_.total())
    refuse(RefusalKind::TooLong,
           fmt::format("the sequence needs {} KV blocks of {} tokens, the cache holds {}", blocks,
                       bs, pool_.total()));
  if (req.grammar && !opts_.vocab)
    refuse(RefusalKind::BadRequest, "this engine has no token vocabulary for structured output");
  if (req.grammar && opts_.vocab->size() != cfg_.vocab_size)
    refuse(RefusalKind::BadRequest,
           fmt::format("structured output: the token vocabulary has {} ids, the model {}",
                       opts_.vocab->size(), cfg_.vocab_size));
  try {
    return std::make_unique<Live>(std::move(sub.req), std::move(sub.sink),
                                  opts_.vocab);  // validates sampling
  } catch (const Error& e) {
    refuse(RefusalKind::BadRequest, e.what());
  }
  return nullptr;  // not reached: refuse throws
}

std::vector<uint64_t> ContinuousEngine::submit_all(std::vector<Submission> seqs) {
  std::vector<std::unique_ptr<Live>> lives;
  lives.reserve(seqs.size());
  for (Submission& s : seqs) lives.push_back(admissible(std::move(s)));
  std::lock_guard<std::mutex> lk(mu_);
  if (stopping_) throw SequenceRefused(RefusalKind::QueueFull, "the server is shutting down");
  const int64_t queued = counters_.waiting + static_cast<int64_t>(incoming_.size());
  const int64_t k = static_cast<int64_t>(lives.size());
  if (queued + k > opts_.max_waiting)
    throw SequenceRefused(
        RefusalKind::QueueFull,
        fmt::format("{} sequences are waiting and this request adds {}; the limit is {}", queued,
                    k, opts_.max_waiting));
  std::vector<uint64_t> ids;
  for (std::unique_ptr<Live>& live : lives) {
    ids.push_back(next_id_++);
    incoming_.emplace_back(ids.back(), std::move(live));
  }
  cv_.notify_one();
  return ids;
}

void ContinuousEngine::cancel(uint64_t id) {
  std::lock_guard<std::mutex> lk(mu_);
  cancels_.insert(id);
  cv_.notify_one();
}

EngineCounters ContinuousEngine::counters() const {
  std::lock_guard<std::mutex> lk(mu_);
  return counters_;
}

bool ContinuousEngine::pool_whole() const {
  std::lock_guard<std::mutex> lk(mu_);
  return counters_.kv_blocks_used == 0 && counters_.running == 0 && counters_.waiting == 0;
}

void ContinuousEngine::shutdown(bool drain) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (!stopping_) drain_ = drain;
    stopping_ = true;
    cv_.notify_one();
  }
  if (thread_.joinable()) thread_.join();
}

void ContinuousEngine::admit_incoming() {
  for (auto& [id, live] : incoming_) {
    sched_.add(id, live->req.prompt, live->req.max_new_tokens, live->req.prefix_salt);
    counters_.prompt_tokens += static_cast<int64_t>(live->req.prompt.size());
    live_.emplace(id, std::move(live));
  }
  incoming_.clear();
  for (uint64_t id : cancels_) {
    if (live_.erase(id) > 0) sched_.remove(id);
    if (opts_.speculative.draft) opts_.speculative.draft->release(id);
  }
  cancels_.clear();
}

void ContinuousEngine::publish_locked() {
  counters_.running = sched_.running();
  counters_.waiting = sched_.waiting();
  counters_.kv_blocks_used = pool_.used_blocks();
  counters_.prefix_cache_queries = sched_.counters().prefix_queries;
  counters_.prefix_cache_hits = sched_.counters().prefix_hits;
  counters_.preemptions = sched_.counters().preemptions;
}

std::optional<RowLoras> ContinuousEngine::step_loras(const StepPlan& plan) const {
  std::vector<const LoraFactorTable*> per_span;
  std::vector<int64_t> counts;
  bool any = false;
  for (const ScheduledSeq& e : plan.seqs) {
    per_span.push_back(live_.at(e.id)->req.lora.get());
    counts.push_back(e.count + static_cast<int64_t>(e.drafts.size()));  // its rows
    any = any || per_span.back() != nullptr;
  }
  if (!any) return std::nullopt;  // base rows only: the forward takes no adapter path
  return group_rows_by_adapter(per_span, counts);
}

bool ContinuousEngine::step() {
  StepPlan plan = sched_.step();
  if (plan.empty()) return false;
  // Speculative decoding: drafts after each unconstrained sequence's token.
  const std::vector<std::vector<std::vector<float>>> draft_q =
      add_step_drafts(opts_.speculative, sched_, plan, [&](uint64_t id) {
        const Live& s = *live_.at(id);
        return s.constraint ? DraftSeat{} : DraftSeat{&s.sampler, s.req.choice};
      });
  const StepRows rows = step_rows(plan);
  const std::optional<RowLoras> loras = step_loras(plan);
  const Tensor logits = runner_.run(rows.tokens, rows.spans, loras ? &*loras : nullptr);
  const int64_t V = cfg_.vocab_size;
  std::vector<int32_t> sampled;
  std::vector<int64_t> accepted;                           // per logits entry: drafts kept
  std::map<uint64_t, std::vector<SampledToken>> drafts_kept;  // the tokens before its pick
  int64_t drafted = 0, kept_drafts = 0;
  std::vector<std::pair<uint64_t, SampledToken>> picks;
  std::set<uint64_t> grammar_refused;  // constrained sequences no token could continue
  int64_t masked = 0, mask_us = 0;
  std::vector<float> masked_row;
  for (size_t r = 0; r < plan.seqs.size(); ++r) {
    const ScheduledSeq& e = plan.seqs[r];
    if (!e.wants_logits) continue;
    Live& s = *live_.at(e.id);
    const std::vector<int32_t>& all = sched_.tokens(e.id);
    const size_t np = static_cast<size_t>(sched_.prompt_tokens(e.id));
    const std::span<const int32_t> prompt(all.data(), np), gen(all.data() + np, all.size() - np);
    std::span<const float> row(logits.data<float>() + rows.first_row[r] * V,
                               static_cast<size_t>(V));
    if (!e.drafts.empty()) {
      std::vector<SampledToken> toks = verify_drafts(s.sampler, row.data(), V, prompt, gen,
                                                     e.drafts, draft_q[r], s.req.choice);
      cut_at_end(toks, gen, s.req.max_new_tokens, opts_.eos_ids, s.stops, opts_.decode);
      drafted += static_cast<int64_t>(e.drafts.size());
      kept_drafts += static_cast<int64_t>(toks.size()) - 1;
      accepted.push_back(static_cast<int64_t>(toks.size()) - 1);
      SampledToken t = std::move(toks.back());
      toks.pop_back();
      sampled.push_back(t.token);
      if (!toks.empty()) drafts_kept[e.id] = std::move(toks);
      picks.emplace_back(e.id, std::move(t));
      continue;
    }
    accepted.push_back(0);
    if (s.constraint) {
      // This sequence's row only: the others in the batch sample as they are.
      const auto t0 = std::chrono::steady_clock::now();
      size_t allowed = 0;
      try {
        allowed = s.constraint->mask(row, masked_row);
      } catch (const Error& err) {  // its automaton outgrew its memory: end it alone
        std::cerr << "serve: sequence " << e.id << " ended: " << err.what() << std::endl;
      }
      mask_us += std::chrono::duration_cast<std::chrono::microseconds>(
                     std::chrono::steady_clock::now() - t0)
                     .count();
      ++masked;
      if (allowed > 0)
        row = masked_row;
      else
        grammar_refused.insert(e.id);
    }
    SampledToken t =
        s.sampler.sample(row, prompt, gen, s.req.choice, static_cast<int64_t>(gen.size()));
    if (s.constraint && !grammar_refused.count(e.id)) {
      bool took = false;
      try {
        took = s.constraint->advance(t.token);
      } catch (const Error&) {
      }
      if (!took &&
          std::find(opts_.eos_ids.begin(), opts_.eos_ids.end(), t.token) == opts_.eos_ids.end())
        grammar_refused.insert(e.id);  // the mask allowed it: only memory stops it
    }
    sampled.push_back(t.token);
    picks.emplace_back(e.id, std::move(t));
  }
  sched_.complete(plan, sampled, accepted);
  // Updates are delivered after the scheduler, the pool and the counters
  // agree, so a client that hears its sequence ended sees its blocks freed.
  std::vector<std::pair<std::unique_ptr<Live>, SequenceUpdate>> ended;
  std::vector<std::pair<Live*, SequenceUpdate>> going;
  for (auto& [id, t] : picks) {
    Live& s = *live_.at(id);
    SequenceUpdate u;
    u.prompt_tokens = static_cast<int64_t>(s.req.prompt.size());
    u.cached_prompt_tokens = sched_.cached_prompt_tokens(id);
    const int32_t token = t.token;
    const bool refused = grammar_refused.count(id) > 0;
    // A token the grammar could not take is not the client's: the sequence
    // ends without it.
    if (const auto kept = drafts_kept.find(id); kept != drafts_kept.end())
      u.tokens = std::move(kept->second);  // speculative decoding's accepted drafts
    if (!refused) u.tokens.push_back(std::move(t));
    const std::vector<int32_t>& all = sched_.tokens(id);
    const std::span<const int32_t> gen(all.data() + u.prompt_tokens,
                                       all.size() - static_cast<size_t>(u.prompt_tokens));
    u.finished = true;
    if (std::find(opts_.eos_ids.begin(), opts_.eos_ids.end(), token) != opts_.eos_ids.end()) {
      u.finish = FinishReason::Eos;
    } else if (refused || (s.constraint && s.constraint->complete())) {
      u.finish = FinishReason::Stop;   // the grammar is complete: nothing may follow
      u.text_end = std::string::npos;  // and all of the text stands
    } else if (StopStrings::Scan sc =
                   s.stops.empty() ? StopStrings::Scan{} : s.stops.scan(opts_.decode(gen));
               sc.stopped) {
      u.finish = FinishReason::Stop;
      u.text_end = sc.end;
    } else if (static_cast<int64_t>(gen.size()) >= s.req.max_new_tokens) {
      u.finish = FinishReason::Length;
    } else {
      u.finished = false;
    }
    if (!u.finished) {
      going.emplace_back(&s, std::move(u));
      continue;
    }
    sched_.remove(id);
    if (opts_.speculative.draft) opts_.speculative.draft->release(id);
    ended.emplace_back(std::move(live_.at(id)), std::move(u));
    live_.erase(id);
  }
  {
    std::lock_guard<std::mutex> lk(mu_);
    counters_.generated_tokens += static_cast<int64_t>(sampled.size()) + kept_drafts;
    counters_.spec_draft_tokens += drafted;
    counters_.spec_accepted_tokens += kept_drafts;
    counters_.structured_steps += masked;
    counters_.structured_mask_us += mask_us;
    publish_locked();
  }
  for (auto& [s, u] : going) s->sink(u);
  for (auto& [s, u] : ended) s->sink(u);
  return true;
}

void ContinuousEngine::loop() {
  for (;;) {
    {
      std::unique_lock<std::mutex> lk(mu_);
      cv_.wait(lk, [&] {
        return stopping_ || !incoming_.empty() || !cancels_.empty() || !sched_.idle();
      });
      admit_incoming();
      if (stopping_ && !drain_) {
        // Cancelled by the shutdown: each sink hears its sequence ended.
        for (auto& [id, live] : live_) {
          SequenceUpdate u;
          u.finished = true;
          u.prompt_tokens = static_cast<int64_t>(live->req.prompt.size());
          live->sink(u);
          sched_.remove(id);
          if (opts_.speculative.draft) opts_.speculative.draft->release(id);
        }
        live_.clear();
      }
      publish_locked();
      if (stopping_ && sched_.idle()) break;
    }
    bool ran = false;
    try {
      ran = step();
    } catch (const std::exception& e) {
      // A failed forward cannot be retried safely: end every sequence.
      std::cerr << "serve: engine step failed: " << e.what() << std::endl;
      std::lock_guard<std::mutex> lk(mu_);
      stopping_ = true;
      drain_ = false;
      continue;
    }
    std::unique_lock<std::mutex> lk(mu_);
    if (!ran && !sched_.idle()) cv_.wait_for(lk, std::chrono::milliseconds(1));
  }
  std::lock_guard<std::mutex> lk(mu_);
  counters_.running = counters_.waiting = 0;
  counters_.kv_blocks_used = pool_.used_blocks();
  runner_.stop();
}

}  // namespace parallm::serve
