// CompletionCall against a scripted engine: one sequence per choice with
// choice = its index, the prompt through the chat template or tokenizer,
// refusals mapped to statuses with nothing left queued, the streamed events
// in order (role, deltas, finish, usage, [DONE]) equal to the body, and
// cancellation of what is unfinished when the call goes away.
#include <gtest/gtest.h>

#include <map>

#include "infer/serve/api_error.h"
#include "infer/serve/completion_call.h"

namespace parallm::serve {
namespace {

using nlohmann::json;

class ScriptedEngine : public Engine {
 public:
  std::vector<uint64_t> submit_all(std::vector<Submission> group) override {
    if (seqs.size() + group.size() > static_cast<size_t>(capacity))
      throw SequenceRefused(RefusalKind::QueueFull, "full");
    std::vector<uint64_t> ids;
    for (Submission& s : group) {
      ids.push_back(next++);
      seqs[ids.back()] = {std::move(s.req), std::move(s.sink)};
    }
    return ids;
  }
  void cancel(uint64_t id) override { cancelled.push_back(id); }
  EngineCounters counters() const override { return {}; }
  void shutdown(bool) override {}

  void send(uint64_t id, const std::string& bytes, bool finished = false,
            FinishReason f = FinishReason::Length, size_t text_end = 0) {
    SequenceUpdate u;
    for (unsigned char c : bytes) u.tokens.push_back({static_cast<int32_t>(c), -1.0, {}});
    u.finished = finished;
    u.finish = f;
    u.text_end = text_end;
    u.prompt_tokens = static_cast<int64_t>(seqs[id].first.prompt.size());
    seqs[id].second(u);
  }

  int64_t capacity = 100;
  uint64_t next = 1;
  std::map<uint64_t, std::pair<SequenceRequest, SequenceSink>> seqs;
  std::vector<uint64_t> cancelled;
};

// The JSON of every "data: {...}" event, and whether [DONE] closed them.
std::vector<json> events_of(const std::string& sse, bool* done) {
  std::vector<json> out;
  *done = false;
  size_t pos = 0;
  while (pos < sse.size()) {
    const size_t end = sse.find("\n\n", pos);
    EXPECT_NE(end, std::string::npos);
    const std::string ev = sse.substr(pos, end - pos);
    EXPECT_EQ(ev.rfind("data: ", 0), 0u) << ev;
    EXPECT_FALSE(*done) << "an event after [DONE]";
    if (ev == "data: [DONE]")
      *done = true;
    else
      out.push_back(json::parse(ev.substr(6)));
    pos = end + 2;
  }
  return out;
}

class CompletionCallTest : public ::testing::Test {
 protected:
  std::unique_ptr<Tokenizer> tok = make_byte_tokenizer();
  ChatTemplate tmpl = ChatTemplate::plain();
  ServedModel model{"tiny", 64, 257, tok.get(), &tmpl, 0};
  ScriptedEngine engine;
  std::unique_ptr<CompletionCall> start(const std::string& body, Endpoint e = Endpoint::Chat) {
    return std::make_unique<CompletionCall>(parse_request(e, body), model, engine, "id-1",
                                            Clock::now());
  }
};

TEST_F(CompletionCallTest, OneSequencePerChoice) {
  auto call = start(R"({"messages": [{"role": "system", "content": "S"},
      {"role": "user", "content": "hi"}], "n": 3, "max_tokens": 5, "stop": ["x"],
      "temperature": 0.7, "seed": 9})");
  ASSERT_EQ(engine.seqs.size(), 3u);
  int64_t choice = 0;
  for (const auto& [id, s] : engine.seqs) {
    const SequenceRequest& r = s.first;
    EXPECT_EQ(r.prompt, (std::vector<int32_t>{'S', '\n', 'h', 'i'}));  // the plain template
    EXPECT_EQ(r.max_new_tokens, 5);
    EXPECT_EQ(r.stop_strings, std::vector<std::string>{"x"});
    EXPECT_DOUBLE_EQ(r.sampling.temperature, 0.7);
    EXPECT_EQ(r.sampling.seed, 9u);
    EXPECT_EQ(r.choice, choice++);
  }
}

TEST_F(CompletionCallTest, ChatWithoutMaxTokensMayFillTheContext) {
  auto call = start(R"({"messages": [{"role": "user", "content": "hello"}]})");
  EXPECT_EQ(engine.seqs.begin()->second.first.max_new_tokens, 64 - 5);
}

TEST_F(CompletionCallTest, PromptsThatDoNotFitAre400) {
  auto status_of = [&](const std::string& body, Endpoint e) {
    try {
      start(body, e);
    } catch (const ApiError& err) {
      return std::make_pair(err.status, std::string(err.what()));
    }
    return std::make_pair(200, std::string());
  };
  auto [s1, m1] = status_of(R"({"prompt": "hello", "max_tokens": 60})", Endpoint::Completion);
  EXPECT_EQ(s1, 400);
  EXPECT_NE(m1.find("maximum context length is 64 tokens. However, you requested 65 tokens "
                    "(5 in the prompt, 60 in the completion)"),
            std::string::npos)
      << m1;
  EXPECT_EQ(status_of(R"({"prompt": ""})", Endpoint::Completion).first, 400);  // no tokens
  EXPECT_EQ(status_of(R"({"prompt": [1, 300]})", Endpoint::Completion).first, 400);
  EXPECT_EQ(
      status_of(R"({"messages": [{"role": "user", "content": ")" + std::string(64, 'a') + R"("}]})",
                Endpoint::Chat)
          .first,
      400);
  EXPECT_TRUE(engine.seqs.empty());
}

TEST_F(CompletionCallTest, AFullQueueIs429AndLeavesNothingQueued) {
  engine.capacity = 2;
  try {
    start(R"({"prompt": "hi", "n": 3})", Endpoint::Completion);
    FAIL() << "accepted";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status, 429);
  }
  EXPECT_TRUE(engine.seqs.empty());
  EXPECT_TRUE(engine.cancelled.empty());  // the whole request was refused at once
}

TEST_F(CompletionCallTest, BodyAfterEveryChoiceEnds) {
  auto call =
      start(R"({"prompt": ["ab", "c"], "max_tokens": 4, "stop": "Z"})", Endpoint::Completion);
  engine.send(1, "xy");
  engine.send(2, "hey", true, FinishReason::Eos);  // the last byte stands for the EOS here
  engine.send(1, "zZq", true, FinishReason::Stop, 3);
  const json b = *call->wait_body();
  EXPECT_EQ(b["object"], "text_completion");
  EXPECT_EQ(b["choices"][0]["text"], "xyz");
  EXPECT_EQ(b["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(b["choices"][1]["text"], "he");
  EXPECT_EQ(b["choices"][1]["finish_reason"], "stop");
  EXPECT_EQ(b["usage"], json::parse(R"({"prompt_tokens": 3, "completion_tokens": 8,
      "total_tokens": 11})"));
  EXPECT_EQ(call->finish_reasons(), (std::vector<std::string>{"stop", "stop"}));
  call.reset();
  EXPECT_TRUE(engine.cancelled.empty());  // nothing was left to cancel
}

TEST_F(CompletionCallTest, StreamedChatEvents) {
  auto call = start(R"({"messages": [{"role": "user", "content": "hi"}], "n": 2,
      "stream": true, "stream_options": {"include_usage": true}, "stop": "END"})");
  std::string sse = call->next_events(std::chrono::milliseconds(1));  // the roles, at once
  engine.send(1, "ab");
  engine.send(2, "xE");
  engine.send(1, "c", true, FinishReason::Length);
  engine.send(2, "ND", true, FinishReason::Stop, 1);
  while (!call->done()) sse += call->next_events(std::chrono::milliseconds(1));
  EXPECT_EQ(call->next_events(std::chrono::milliseconds(1)), "");
  bool done = false;
  const std::vector<json> ev = events_of(sse, &done);
  EXPECT_TRUE(done);
  std::map<int, std::string> text;
  std::map<int, int> roles, finishes;
  for (size_t i = 0; i + 1 < ev.size(); ++i) {
    const json& c = ev[i]["choices"][0];
    EXPECT_EQ(ev[i]["object"], "chat.completion.chunk");
    EXPECT_EQ(ev[i]["id"], "id-1");
    EXPECT_TRUE(ev[i]["usage"].is_null());
    const int idx = c["index"];
    EXPECT_EQ(finishes[idx], 0) << "a chunk after the finish of choice " << idx;
    if (c["delta"].contains("role")) {
      EXPECT_EQ(text[idx], "") << "the role comes first";
      ++roles[idx];
    }
    if (c["delta"].contains("content")) text[idx] += c["delta"]["content"];
    if (!c["finish_reason"].is_null()) {
      ++finishes[idx];
      EXPECT_EQ(c["delta"], json::object());
    }
  }
  EXPECT_EQ(text, (std::map<int, std::string>{{0, "abc"}, {1, "x"}}));  // "E" never went out
  EXPECT_EQ(roles, (std::map<int, int>{{0, 1}, {1, 1}}));
  EXPECT_EQ(finishes, (std::map<int, int>{{0, 1}, {1, 1}}));
  EXPECT_EQ(ev.back()["choices"], json::array());
  EXPECT_EQ(ev.back()["usage"]["completion_tokens"], 7);
  EXPECT_EQ(ev.back()["usage"]["prompt_tokens"], 2);  // counted once for both choices
}

TEST_F(CompletionCallTest, StreamedCompletionWithoutUsage) {
  auto call = start(R"({"prompt": "hi", "stream": true, "logprobs": 1})", Endpoint::Completion);
  engine.send(1, "ab");
  engine.send(1, "c", true, FinishReason::Length);
  std::string sse;
  while (!call->done()) sse += call->next_events(std::chrono::milliseconds(1));
  bool done = false;
  const std::vector<json> ev = events_of(sse, &done);
  EXPECT_TRUE(done);
  ASSERT_EQ(ev.size(), 2u);  // one event per engine update
  EXPECT_EQ(ev[0]["choices"][0]["text"], "ab");
  EXPECT_EQ(ev[0]["choices"][0]["logprobs"]["tokens"], json::parse(R"(["a", "b"])"));
  EXPECT_EQ(ev[1]["choices"][0]["text"], "c");
  EXPECT_EQ(ev[1]["choices"][0]["logprobs"]["text_offset"], json::parse("[2]"));
  EXPECT_EQ(ev[1]["choices"][0]["finish_reason"], "length");
  EXPECT_FALSE(ev[1].contains("usage"));
}

TEST_F(CompletionCallTest, GoingAwayCancelsWhatIsUnfinished) {
  auto call = start(R"({"prompt": "hi", "n": 3, "stream": true})", Endpoint::Completion);
  engine.send(2, "a", true, FinishReason::Length);
  call->next_events(std::chrono::milliseconds(1));
  call.reset();
  EXPECT_EQ(engine.cancelled, (std::vector<uint64_t>{1, 3}));
}

TEST_F(CompletionCallTest, AClientGoneWhileWaitingCancelsAndReturnsNothing) {
  auto call = start(R"({"prompt": "ab", "n": 2, "max_tokens": 4})", Endpoint::Completion);
  engine.send(1, "xy", true, FinishReason::Length);
  engine.send(2, "x");
  int asked = 0;
  const auto body = call->wait_body(std::chrono::milliseconds(1), [&] { return ++asked >= 3; });
  EXPECT_FALSE(body.has_value());
  EXPECT_EQ(asked, 3);
  EXPECT_EQ(engine.cancelled, (std::vector<uint64_t>{2}));  // choice 0 had finished
}

TEST_F(CompletionCallTest, TimingsOfTheTokens) {
  auto call = start(R"({"prompt": "hi", "stream": true})", Endpoint::Completion);
  engine.send(1, "a");
  engine.send(1, "bc", true);
  while (!call->done()) call->next_events(std::chrono::milliseconds(1));
  EXPECT_GE(call->timings().ttft_s, 0.0);
  EXPECT_EQ(call->timings().itl.size(), 2u);  // b and c share the gap after a
}

}  // namespace
}  // namespace parallm::serve
