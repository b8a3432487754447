// CompletionCall: the life of one chat or completions request after it was
// parsed: its prompts planned, one engine sequence per choice submitted
// (choice i keys its draws, so the n choices differ and a seed reproduces
// each), the engine's updates turned into the response body, or into SSE
// events as they come, and the timings the metrics and the log record.
// Invariant: once the call ends (finished, cancelled or destroyed) none of
// its sequences is left in the engine.
#pragma once
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "infer/serve/api_request.h"
#include "infer/serve/api_response.h"
#include "infer/serve/choice_text.h"
#include "infer/serve/engine.h"
#include "infer/serve/sequence_inbox.h"
#include "infer/serve/served_model.h"
#include "infer/serve/tool_stream_hold.h"

namespace parallm::serve {

// What a finished call reports to the metrics and the request log.
struct CallTimings {
  double ttft_s = -1.0;     // arrival -> first token (-1: none came)
  std::vector<double> itl;  // gaps between consecutive tokens of a choice
};

class CompletionCall {
 public:
  // Plans the prompts and submits every sequence. Throws ApiError: 400 for
  // bad prompts, 429 when the engine's queue is full (nothing stays queued).
  CompletionCall(ApiRequest req, const ServedModel& model, Engine& engine, std::string id,
                 Clock::time_point arrival);
  ~CompletionCall();  // cancels what is still running
  CompletionCall(const CompletionCall&) = delete;
  CompletionCall& operator=(const CompletionCall&) = delete;

  // Not streamed: waits for every choice, then returns the body. Every
  // `poll` it asks `client_gone`; once that says true the call is cancelled
  // (the engine frees its blocks at its next step) and nullopt returned.
  std::optional<nlohmann::json> wait_body(
      std::chrono::milliseconds poll = std::chrono::milliseconds(200),
      const std::function<bool()>& client_gone = [] { return false; });
  // Streamed: the SSE text of what arrived within `wait` (may be empty);
  // after the last choice ends, its final chunks, the usage chunk when
  // asked, and `data: [DONE]`; done() is true from then on.
  std::string next_events(std::chrono::milliseconds wait);
  bool done() const { return done_; }
  // Cancels every unfinished sequence (a client that went away).
  void cancel();

  const ApiRequest& request() const { return req_; }
  Usage usage() const;
  const CallTimings& timings() const { return timings_; }
  std::vector<std::string> finish_reasons() const;  // "" for an unfinished choice

 private:
  // Takes one update into its choice (and the timings).
  void apply(SequenceInbox::Arrival& a);
  // A chat choice's end when tools are offered: the content not yet sent,
  // then each call read from the held text as delta.tool_calls chunks;
  // tool_calls says whether any call was made.
  std::string held_tool_events(size_t i, bool& tool_calls);
  std::string choice_events(size_t i);

  ApiRequest req_;
  const ServedModel& model_;
  Engine& engine_;
  ResponseMeta meta_;
  Clock::time_point arrival_;
  std::shared_ptr<SequenceInbox> inbox_;
  std::vector<uint64_t> seq_ids_;
  std::vector<ChoiceText> choices_;
  std::vector<ToolStreamHold> holds_;   // per choice: text held as a possible tool call
  std::vector<int64_t> prompt_tokens_;  // per prompt (usage counts each prompt once)
  std::vector<Clock::time_point> last_token_at_;
  std::vector<size_t> sent_tokens_;  // per choice: tokens whose logprobs were sent
  std::vector<bool> role_sent_, finish_sent_;
  CallTimings timings_;
  bool done_ = false;
};

}  // namespace parallm::serve
