// Response bodies and streaming chunks in the OpenAI shapes: chat and
// completions bodies with usage and finish reasons, logprobs of each
// endpoint, finite logprobs, SSE framing, and the chunk fields a client
// reads (role first, finish last, usage null until the usage chunk).
#include <gtest/gtest.h>

#include <limits>

#include "infer/serve/api_response.h"
#include "infer/serve/stream_chunks.h"

namespace parallm::serve {
namespace {

using nlohmann::json;

SequenceUpdate update(const std::string& bytes, bool finished, FinishReason f) {
  SequenceUpdate u;
  for (unsigned char c : bytes)
    u.tokens.push_back(
        {static_cast<int32_t>(c), -0.25, {{static_cast<int32_t>(c), -0.25}, {'?', -2.0}}});
  u.finished = finished;
  u.finish = f;
  u.prompt_tokens = 4;
  return u;
}

class ApiResponseTest : public ::testing::Test {
 protected:
  std::unique_ptr<Tokenizer> tok = make_byte_tokenizer();
  ResponseMeta meta{"chatcmpl-1", 1700000000, "tiny"};
};

TEST_F(ApiResponseTest, ChatBody) {
  std::vector<ChoiceText> cs;
  cs.emplace_back(*tok, std::vector<std::string>{});
  cs.emplace_back(*tok, std::vector<std::string>{});
  cs[0].add(update("hi", true, FinishReason::Length));
  SequenceUpdate eos = update("ok", false, FinishReason::Length);
  eos.tokens.push_back({256, -0.1, {}});
  eos.finished = true;
  eos.finish = FinishReason::Eos;
  cs[1].add(eos);
  ApiRequest req;
  const json b = chat_completion_body(meta, *tok, req, cs, {4, 5});
  EXPECT_EQ(b["object"], "chat.completion");
  EXPECT_EQ(b["id"], "chatcmpl-1");
  EXPECT_EQ(b["created"], 1700000000);
  EXPECT_EQ(b["model"], "tiny");
  EXPECT_EQ(b["choices"][0], json::parse(R"({"index": 0, "message": {"role": "assistant",
      "content": "hi"}, "logprobs": null, "finish_reason": "length"})"));
  EXPECT_EQ(b["choices"][1]["message"]["content"], "ok");
  EXPECT_EQ(b["choices"][1]["finish_reason"], "stop");  // an EOS is a stop
  EXPECT_EQ(b["usage"], json::parse(R"({"prompt_tokens": 4, "completion_tokens": 5,
      "total_tokens": 9})"));

  req.logprobs = true;
  const json l = chat_completion_body(meta, *tok, req, cs, {4, 5})["choices"][0]["logprobs"];
  ASSERT_EQ(l["content"].size(), 2u);
  EXPECT_EQ(l["content"][0], json::parse(R"({"token": "h", "logprob": -0.25, "bytes": [104],
      "top_logprobs": [{"token": "h", "logprob": -0.25, "bytes": [104]},
                       {"token": "?", "logprob": -2.0, "bytes": [63]}]})"));
}

TEST_F(ApiResponseTest, CompletionBodyAndLogprobs) {
  std::vector<ChoiceText> cs;
  cs.emplace_back(*tok, std::vector<std::string>{});
  cs[0].add(update("ab", true, FinishReason::Length));
  ApiRequest req;
  req.endpoint = Endpoint::Completion;
  req.logprobs = true;
  meta.id = "cmpl-1";
  const json b = text_completion_body(meta, *tok, req, cs, {4, 2});
  EXPECT_EQ(b["object"], "text_completion");
  EXPECT_EQ(b["choices"][0]["text"], "ab");
  EXPECT_EQ(b["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(b["choices"][0]["logprobs"], json::parse(R"({"tokens": ["a", "b"],
      "token_logprobs": [-0.25, -0.25], "top_logprobs": [{"a": -0.25, "?": -2.0},
      {"b": -0.25, "?": -2.0}], "text_offset": [0, 1]})"));
}

TEST_F(ApiResponseTest, CachedPromptTokensOnlyWhenThereAreAny) {
  EXPECT_FALSE(usage_json({5, 1, 0}).contains("prompt_tokens_details"));
  EXPECT_EQ(usage_json({5, 1, 4})["prompt_tokens_details"], json::parse(R"({"cached_tokens": 4})"));
}

TEST_F(ApiResponseTest, InfiniteLogprobsBecomeFinite) {
  std::vector<SampledToken> t = {{65, -std::numeric_limits<double>::infinity(), {}}};
  const json l = chat_logprobs(*tok, t, 0, 1);
  EXPECT_EQ(l["content"][0]["logprob"], -9999.0);
  EXPECT_NO_THROW(dump_body(l));
}

TEST_F(ApiResponseTest, InvalidUtf8IsReplacedNotThrown) {
  EXPECT_EQ(dump_body(json{{"t", std::string("a\xFF")}}), "{\"t\":\"a\xEF\xBF\xBD\"}");
}

TEST_F(ApiResponseTest, SseFraming) {
  EXPECT_EQ(sse_event(json{{"a", 1}}), "data: {\"a\":1}\n\n");
  EXPECT_EQ(sse_done(), "data: [DONE]\n\n");
}

TEST_F(ApiResponseTest, ChatChunks) {
  const json first = chat_chunk(meta, {0, true, std::string(), nullptr, std::nullopt}, false);
  EXPECT_EQ(first["object"], "chat.completion.chunk");
  EXPECT_EQ(first["choices"][0]["delta"], json::parse(R"({"role": "assistant", "content": ""})"));
  EXPECT_TRUE(first["choices"][0]["finish_reason"].is_null());
  EXPECT_FALSE(first.contains("usage"));

  const json text = chat_chunk(meta, {1, false, std::string("x"), nullptr, std::nullopt}, true);
  EXPECT_EQ(text["choices"][0]["index"], 1);
  EXPECT_EQ(text["choices"][0]["delta"], json::parse(R"({"content": "x"})"));
  EXPECT_TRUE(text["usage"].is_null());
  EXPECT_TRUE(text.contains("usage"));

  const json last = chat_chunk(meta, {0, false, std::nullopt, nullptr, FinishReason::Stop}, true);
  EXPECT_EQ(last["choices"][0]["delta"], json::object());
  EXPECT_EQ(last["choices"][0]["finish_reason"], "stop");

  const json u = usage_chunk(meta, "chat.completion.chunk", {3, 4});
  EXPECT_EQ(u["choices"], json::array());
  EXPECT_EQ(u["usage"]["total_tokens"], 7);
}

TEST_F(ApiResponseTest, CompletionChunks) {
  const json c =
      completion_chunk(meta, {0, false, std::string("yo"), nullptr, FinishReason::Length}, false);
  EXPECT_EQ(c["object"], "text_completion");
  EXPECT_EQ(c["choices"][0], json::parse(R"({"index": 0, "text": "yo", "logprobs": null,
      "finish_reason": "length"})"));
}

}  // namespace
}  // namespace parallm::serve
