// CompletionCall (see completion_call.h).
#include "infer/serve/completion_call.h"

#include <algorithm>
#include <ctime>

#include "infer/serve/api_error.h"
#include "infer/serve/request_prompts.h"
#include "infer/serve/stream_chunks.h"
#include "infer/serve/tool_call_output.h"
#include "infer/serve/tool_call_text.h"
#include "infer/serve/tool_stream_hold.h"

namespace parallm::serve {

namespace {
ApiError refusal_error(const SequenceRefused& e) {
  switch (e.kind) {
    case RefusalKind::QueueFull:
      return ApiError(429, std::string("the server is at capacity, try again later: ") + e.what(),
                      "", "rate_limit_error", "server_busy");
    case RefusalKind::TooLong:
      return ApiError(400, e.what(), "", "invalid_request_error", "context_length_exceeded");
    case RefusalKind::BadRequest:
      break;
  }
  return ApiError(400, e.what());
}
}  // namespace

CompletionCall::CompletionCall(ApiRequest req, const ServedModel& model, Engine& engine,
                               std::string id, Clock::time_point arrival)
    : req_(std::move(req)),
      model_(model),
      engine_(engine),
      meta_{std::move(id), static_cast<int64_t>(std::time(nullptr)),
            req_.lora ? req_.model : model.name},
      arrival_(arrival),
      inbox_(std::make_shared<SequenceInbox>()) {
  if (req_.tools.active()) {  // the format is the model's: known only now
    req_.tools.format = tool_format_of(model_.chat_template->source());
    if (req_.tools.constrained()) req_.grammar = compile_tool_call_grammar(req_.tools);
  }
  const std::vector<PromptPlan> plans = plan_prompts(req_, model_);
  std::vector<Submission> seqs;
  for (const PromptPlan& p : plans) {
    prompt_tokens_.push_back(static_cast<int64_t>(p.ids.size()));
    for (int64_t j = 0; j < req_.n; ++j) {
      const size_t index = seqs.size();
      seqs.push_back({{p.ids, req_.sampling, p.max_new_tokens, req_.stop,
                       static_cast<int64_t>(index), req_.grammar, req_.lora, req_.lora_salt},
                      inbox_->sink_for(index)});
      choices_.emplace_back(*model_.tokenizer, req_.stop);
      holds_.emplace_back(req_.tools.format, req_.tools.constrained());
    }
  }
  const size_t n = choices_.size();
  last_token_at_.assign(n, Clock::time_point{});
  sent_tokens_.assign(n, 0);
  role_sent_.assign(n, false);
  finish_sent_.assign(n, false);
  try {
    seq_ids_ = engine_.submit_all(std::move(seqs));  // all of the request or none of it
  } catch (const SequenceRefused& e) {
    throw refusal_error(e);
  }
}

CompletionCall::~CompletionCall() { cancel(); }

void CompletionCall::cancel() {
  for (size_t i = 0; i < seq_ids_.size(); ++i)
    if (!choices_[i].finished()) engine_.cancel(seq_ids_[i]);
}

void CompletionCall::apply(SequenceInbox::Arrival& a) {
  const size_t k = a.update.tokens.size();
  if (k > 0) {
    if (timings_.ttft_s < 0)
      timings_.ttft_s = std::chrono::duration<double>(a.at - arrival_).count();
    Clock::time_point& last = last_token_at_[a.choice];
    // Tokens that arrive together share the gap since the choice's last ones.
    if (last != Clock::time_point{}) {
      const double gap = std::chrono::duration<double>(a.at - last).count();
      timings_.itl.insert(timings_.itl.end(), k, gap / static_cast<double>(k));
    }
    last = a.at;
  }
  choices_[a.choice].add(a.update);
}

std::optional<nlohmann::json> CompletionCall::wait_body(std::chrono::milliseconds poll,
                                                        const std::function<bool()>& client_gone) {
  auto all_done = [&] {
    return std::all_of(choices_.begin(), choices_.end(),
                       [](const ChoiceText& c) { return c.finished(); });
  };
  while (!all_done()) {
    for (SequenceInbox::Arrival& a : inbox_->take(poll)) apply(a);
    if (!all_done() && client_gone()) {
      cancel();
      return std::nullopt;
    }
  }
  done_ = true;
  const Tokenizer& tok = *model_.tokenizer;
  return req_.endpoint == Endpoint::Chat
             ? chat_completion_body(meta_, tok, req_, choices_, usage())
             : text_completion_body(meta_, tok, req_, choices_, usage());
}

std::string CompletionCall::choice_events(size_t i) {
  ChoiceText& c = choices_[i];
  if (finish_sent_[i]) return "";
  const bool chat = req_.endpoint == Endpoint::Chat;
  std::string out;
  if (chat && !role_sent_[i]) {
    out += sse_event(
        chat_chunk(meta_, {i, true, std::string(), nullptr, std::nullopt}, req_.include_usage));
    role_sent_[i] = true;
  }
  // With tools offered, text that may be a call is held to the end.
  const bool held = chat && req_.tools.active();
  const std::string delta = held ? holds_[i].feed(c.take_delta()) : c.take_delta();
  const size_t to = c.tokens().size();
  nlohmann::json lp;
  if (req_.logprobs && to > sent_tokens_[i])
    lp = chat ? chat_logprobs(*model_.tokenizer, c.tokens(), sent_tokens_[i], to)
              : completion_logprobs(*model_.tokenizer, c, sent_tokens_[i], to);
  sent_tokens_[i] = to;
  std::optional<FinishReason> finish;
  if (c.finished()) finish = c.finish();
  if (chat) {
    if (!delta.empty() || !lp.is_null())
      out += sse_event(chat_chunk(meta_, {i, false, delta, lp, std::nullopt}, req_.include_usage));
    bool tool_calls = false;
    if (held && finish) out += held_tool_events(i, tool_calls);
    if (finish) {
      ChunkChoice last{i, false, std::nullopt, nullptr, finish};
      last.finish_tool_calls = tool_calls;
      out += sse_event(chat_chunk(meta_, last, req_.include_usage));
    }
  } else if (!delta.empty() || !lp.is_null() || finish) {
    out += sse_event(completion_chunk(meta_, {i, false, delta, lp, finish}, req_.include_usage));
  }
  finish_sent_[i] = finish.has_value();
  return out;
}

std::string CompletionCall::held_tool_events(size_t i, bool& tool_calls) {
  const ChoiceText& c = choices_[i];
  const ToolCallOutput t =
      tool_call_output(req_, holds_[i].held(), c.finish() == FinishReason::Length, meta_.id, i);
  const std::string content = holds_[i].flush() + t.content.value_or("");
  std::string out;
  if (!content.empty())
    out += sse_event(
        chat_chunk(meta_, {i, false, content, nullptr, std::nullopt}, req_.include_usage));
  for (size_t k = 0; k < t.calls.size(); ++k)
    for (const nlohmann::json& d :
         {tool_call_header_delta(t.calls[k], k), tool_call_arguments_delta(t.calls[k], k)}) {
      ChunkChoice piece{i, false, std::nullopt, nullptr, std::nullopt};
      piece.tool_calls = nlohmann::json::array({d});
      out += sse_event(chat_chunk(meta_, piece, req_.include_usage));
    }
  tool_calls = !t.calls.empty();
  return out;
}

std::string CompletionCall::next_events(std::chrono::milliseconds wait) {
  if (done_) return "";
  std::string out;
  // The role chunks go out at once, before the first token.
  const bool first = std::none_of(role_sent_.begin(), role_sent_.end(), [](bool b) { return b; });
  if (first && req_.endpoint == Endpoint::Chat) {
    for (size_t i = 0; i < choices_.size(); ++i) out += choice_events(i);
    return out;
  }
  // One event per update, as the engine made them (not merged per wait).
  for (SequenceInbox::Arrival& a : inbox_->take(wait)) {
    apply(a);
    out += choice_events(a.choice);
  }
  if (std::all_of(finish_sent_.begin(), finish_sent_.end(), [](bool b) { return b; })) {
    if (req_.include_usage)
      out += sse_event(usage_chunk(
          meta_, req_.endpoint == Endpoint::Chat ? "chat.completion.chunk" : "text_completion",
          usage()));
    out += sse_done();
    done_ = true;
  }
  return out;
}

Usage CompletionCall::usage() const {
  Usage u;
  for (int64_t p : prompt_tokens_) u.prompt_tokens += p;
  // Each prompt counts once; its first choice says how much of it was cached.
  for (size_t p = 0; p < prompt_tokens_.size(); ++p)
    u.cached_prompt_tokens += choices_[p * static_cast<size_t>(req_.n)].cached_prompt_tokens();
  for (const ChoiceText& c : choices_)
    u.completion_tokens += static_cast<int64_t>(c.tokens().size());
  return u;
}

std::vector<std::string> CompletionCall::finish_reasons() const {
  std::vector<std::string> out;
  for (const ChoiceText& c : choices_)
    out.push_back(c.finished() ? api_finish_reason(c.finish()) : "");
  return out;
}

}  // namespace parallm::serve
