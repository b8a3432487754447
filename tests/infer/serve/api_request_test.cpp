// Parsing and checking OpenAI requests: every field of both endpoints, their
// defaults, the forms a prompt, stop and message content may take, unknown
// fields ignored, and a 400 naming the field for each wrong type or value;
// structured-output fields compiled to a grammar (schema key order kept).
#include <gtest/gtest.h>

#include "infer/serve/api_error.h"
#include "infer/serve/api_request.h"
#include "infer/structured/grammar_automaton.h"

namespace parallm::serve {
namespace {

using nlohmann::json;

// The ApiError a body gets, or a failure when it is accepted.
ApiError error_of(Endpoint e, const std::string& body) {
  try {
    parse_request(e, body);
  } catch (const ApiError& err) {
    return err;
  }
  ADD_FAILURE() << "accepted: " << body;
  return ApiError(0, "");
}

TEST(ApiRequest, ChatFieldsAndDefaults) {
  const ApiRequest r = parse_request(Endpoint::Chat, R"({
    "model": "m", "messages": [{"role": "system", "content": "be brief"},
                               {"role": "user", "content": [{"type": "text", "text": "a"},
                                                            {"type": "text", "text": "b"}]},
                               {"role": "assistant", "content": null},
                               {"role": "developer", "content": "x"}],
    "max_completion_tokens": 7, "temperature": 0.5, "top_p": 0.9, "top_k": 40, "min_p": 0.1,
    "n": 2, "stop": "END", "seed": -3, "presence_penalty": 0.5, "frequency_penalty": -1,
    "repetition_penalty": 1.1, "logprobs": true, "top_logprobs": 4, "stream": true,
    "stream_options": {"include_usage": true}, "user": "ignored", "whatever": {"x": [1]}})");
  EXPECT_EQ(r.endpoint, Endpoint::Chat);
  EXPECT_EQ(r.model, "m");
  ASSERT_EQ(r.messages.size(), 4u);
  EXPECT_EQ(r.messages[1].role, "user");
  EXPECT_EQ(r.messages[1].content, "ab");
  EXPECT_EQ(r.messages[2].content, "");
  EXPECT_EQ(r.messages[3].role, "system");
  EXPECT_EQ(r.max_tokens, 7);
  EXPECT_DOUBLE_EQ(r.sampling.temperature, 0.5);
  EXPECT_DOUBLE_EQ(r.sampling.top_p, 0.9);
  EXPECT_EQ(r.sampling.top_k, 40);
  EXPECT_DOUBLE_EQ(r.sampling.min_p, 0.1);
  EXPECT_DOUBLE_EQ(r.sampling.presence_penalty, 0.5);
  EXPECT_DOUBLE_EQ(r.sampling.frequency_penalty, -1.0);
  EXPECT_DOUBLE_EQ(r.sampling.repetition_penalty, 1.1);
  EXPECT_EQ(r.sampling.seed, static_cast<uint64_t>(int64_t{-3}));
  EXPECT_TRUE(r.seed_given);
  EXPECT_EQ(r.n, 2);
  EXPECT_EQ(r.stop, std::vector<std::string>{"END"});
  EXPECT_TRUE(r.logprobs);
  EXPECT_EQ(r.sampling.logprobs, 4);
  EXPECT_TRUE(r.sampling.token_logprob);
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);

  const ApiRequest d =
      parse_request(Endpoint::Chat, R"({"messages": [{"role": "user", "content": "hi"}]})");
  EXPECT_EQ(d.model, "");
  EXPECT_FALSE(d.max_tokens.has_value());  // a chat answer may fill the context
  EXPECT_DOUBLE_EQ(d.sampling.temperature, 1.0);
  EXPECT_FALSE(d.seed_given);
  EXPECT_EQ(d.n, 1);
  EXPECT_FALSE(d.logprobs);
  EXPECT_FALSE(d.sampling.token_logprob);  // no exp over the vocabulary per token
  EXPECT_FALSE(d.stream);
}

TEST(ApiRequest, CompletionPromptForms) {
  const ApiRequest a = parse_request(Endpoint::Completion, R"({"prompt": "hello"})");
  ASSERT_EQ(a.prompts.size(), 1u);
  EXPECT_EQ(a.prompts[0].text, "hello");
  EXPECT_FALSE(a.prompts[0].is_ids);
  EXPECT_EQ(a.max_tokens, 16);  // the completions API's default
  EXPECT_FALSE(a.logprobs);
  EXPECT_FALSE(a.sampling.token_logprob);

  const ApiRequest b = parse_request(Endpoint::Completion, R"({"prompt": ["x", "y"]})");
  ASSERT_EQ(b.prompts.size(), 2u);
  EXPECT_EQ(b.prompts[1].text, "y");

  const ApiRequest c =
      parse_request(Endpoint::Completion, R"({"prompt": [5, 6, 7], "logprobs": 0})");
  ASSERT_EQ(c.prompts.size(), 1u);
  EXPECT_TRUE(c.prompts[0].is_ids);
  EXPECT_EQ(c.prompts[0].ids, (std::vector<int32_t>{5, 6, 7}));
  EXPECT_TRUE(c.logprobs);  // logprobs 0: the chosen tokens' only
  EXPECT_EQ(c.sampling.logprobs, 0);
  EXPECT_TRUE(c.sampling.token_logprob);

  const ApiRequest d = parse_request(Endpoint::Completion,
                                     R"({"prompt": [[1, 2], [3]], "stop": ["a", "b"],
                                         "max_tokens": 3, "top_k": -1, "best_of": 1})");
  ASSERT_EQ(d.prompts.size(), 2u);
  EXPECT_EQ(d.prompts[1].ids, std::vector<int32_t>{3});
  EXPECT_EQ(d.stop, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(d.sampling.top_k, 0);  // -1: off, as vLLM has it
}

TEST(ApiRequest, NullMeansAbsent) {
  const ApiRequest r = parse_request(
      Endpoint::Completion,
      R"({"prompt": "x", "max_tokens": null, "temperature": null, "stop": null, "n": null,
          "stream_options": null, "seed": null})");
  EXPECT_EQ(r.max_tokens, 16);
  EXPECT_DOUBLE_EQ(r.sampling.temperature, 1.0);
  EXPECT_TRUE(r.stop.empty());
  EXPECT_FALSE(r.seed_given);
}

TEST(ApiRequest, MalformedBodies) {
  for (const char* body : {"", "{", R"({"prompt": "x",})", "nul", "[1, 2]", "\"text\"", "3"}) {
    const ApiError e = error_of(Endpoint::Completion, body);
    EXPECT_EQ(e.status, 400) << body;
    EXPECT_EQ(e.type, "invalid_request_error");
  }
}

TEST(ApiRequest, WrongTypesAndValuesNameTheField) {
  struct Case {
    Endpoint e;
    const char* body;
    const char* param;
    const char* message;
  };
  const Case cases[] = {
      {Endpoint::Chat, R"({})", "messages", "'messages': is required"},
      {Endpoint::Chat, R"({"messages": "hi"})", "messages",
       "'messages': expected an array, got a string"},
      {Endpoint::Chat, R"({"messages": []})", "messages", "at least one message"},
      {Endpoint::Chat, R"({"messages": [3]})", "messages[0]", "expected an object, got an integer"},
      {Endpoint::Chat, R"({"messages": [{"content": "x"}]})", "messages[0].role", "is required"},
      {Endpoint::Chat, R"({"messages": [{"role": "robot", "content": "x"}]})", "messages[0].role",
       "got 'robot'"},
      {Endpoint::Chat, R"({"messages": [{"role": "user"}]})", "messages[0].content", "is required"},
      {Endpoint::Chat, R"({"messages": [{"role": "user", "content": 5}]})", "messages[0].content",
       "got an integer"},
      {Endpoint::Chat,
       R"({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]})",
       "messages[0].content[0].type", "'image_url' are not supported"},
      {Endpoint::Chat, R"({"messages": [{"role": "user", "content": "x"}], "top_logprobs": 2})",
       "top_logprobs", "needs logprobs to be true"},
      {Endpoint::Chat, R"({"messages": [{"role": "user", "content": "x"}], "top_logprobs": 21,
                          "logprobs": true})",
       "top_logprobs", "must be in [0, 20], got 21"},
      {Endpoint::Chat, R"({"messages": [{"role": "user", "content": "x"}], "logprobs": 1})",
       "logprobs", "expected a boolean, got an integer"},
      {Endpoint::Chat, R"({"messages": [{"role": "user", "content": "x"}], "tools": [{}]})",
       "tools[0].type", "is required ('function')"},
      {Endpoint::Completion, R"({"max_tokens": 3})", "prompt", "'prompt': is required"},
      {Endpoint::Completion, R"({"prompt": 5})", "prompt", "got an integer"},
      {Endpoint::Completion, R"({"prompt": []})", "prompt", "empty array"},
      {Endpoint::Completion, R"({"prompt": [1, -2]})", "prompt", "non-negative integers, got -2"},
      {Endpoint::Completion, R"({"prompt": [[1], {"a": 1}]})", "prompt", "an object"},
      {Endpoint::Completion, R"({"prompt": "x", "max_tokens": -1})", "max_tokens",
       "'max_tokens': must be >= 1, got -1"},
      {Endpoint::Completion, R"({"prompt": "x", "max_tokens": 0})", "max_tokens", "got 0"},
      {Endpoint::Completion, R"({"prompt": "x", "max_tokens": 2.5})", "max_tokens",
       "expected an integer, got a number"},
      {Endpoint::Completion, R"({"prompt": "x", "max_tokens": true})", "max_tokens",
       "got a boolean"},
      {Endpoint::Completion, R"({"prompt": "x", "max_tokens": 18446744073709551615})", "max_tokens",
       "too large"},
      {Endpoint::Completion, R"({"prompt": "x", "temperature": "hot"})", "temperature",
       "expected a number, got a string"},
      {Endpoint::Completion, R"({"prompt": "x", "temperature": -0.1})", "temperature",
       "must be in [0, 2]"},
      {Endpoint::Completion, R"({"prompt": "x", "top_p": 0})", "top_p", "must be > 0"},
      {Endpoint::Completion, R"({"prompt": "x", "top_p": 1.5})", "top_p", "must be in [0, 1]"},
      {Endpoint::Completion, R"({"prompt": "x", "top_k": -2})", "top_k", "got -2"},
      {Endpoint::Completion, R"({"prompt": "x", "min_p": 2})", "min_p", "must be in [0, 1]"},
      {Endpoint::Completion, R"({"prompt": "x", "presence_penalty": 3})", "presence_penalty",
       "must be in [-2, 2]"},
      {Endpoint::Completion, R"({"prompt": "x", "frequency_penalty": -2.5})", "frequency_penalty",
       "must be in [-2, 2]"},
      {Endpoint::Completion, R"({"prompt": "x", "repetition_penalty": 0})", "repetition_penalty",
       "must be > 0"},
      {Endpoint::Completion, R"({"prompt": "x", "n": 0})", "n", "must be in [1, 64], got 0"},
      {Endpoint::Completion, R"({"prompt": "x", "n": 65})", "n", "got 65"},
      {Endpoint::Completion, R"({"prompt": "x", "best_of": 3})", "best_of", "best_of = n"},
      {Endpoint::Completion, R"({"prompt": "x", "seed": "1"})", "seed", "got a string"},
      {Endpoint::Completion, R"({"prompt": "x", "stop": 5})", "stop", "got an integer"},
      {Endpoint::Completion, R"({"prompt": "x", "stop": ["a", 1]})", "stop",
       "an array holding an integer"},
      {Endpoint::Completion, R"({"prompt": "x", "stop": [""]})", "stop", "may not be empty"},
      {Endpoint::Completion,
       R"({"prompt": "x", "stop": ["a","b","c","d","e","f","g","h","i","j","k","l","m","n","o",
                                   "p","q"]})",
       "stop", "at most 16 stop strings, got 17"},
      {Endpoint::Completion, R"({"prompt": "x", "stream": "yes"})", "stream", "got a string"},
      {Endpoint::Completion, R"({"prompt": "x", "stream_options": true})", "stream_options",
       "expected an object"},
      {Endpoint::Completion, R"({"prompt": "x", "stream_options": {"include_usage": 1}})",
       "stream_options.include_usage", "expected a boolean"},
      {Endpoint::Completion, R"({"prompt": "x", "logprobs": true})", "logprobs",
       "expected an integer, got a boolean"},
      {Endpoint::Completion, R"({"prompt": "x", "logprobs": 21})", "logprobs", "got 21"},
      {Endpoint::Completion, R"({"prompt": "x", "echo": true})", "echo", "not supported"},
      {Endpoint::Completion, R"({"prompt": "x", "suffix": "y"})", "suffix", "not supported"},
      {Endpoint::Completion, R"({"prompt": "x", "logit_bias": {"5": 10}})", "logit_bias",
       "not supported"},
      {Endpoint::Completion, R"({"prompt": "x", "model": 3})", "model", "got an integer"},
  };
  for (const Case& c : cases) {
    const ApiError e = error_of(c.e, c.body);
    EXPECT_EQ(e.status, 400) << c.body;
    EXPECT_EQ(e.param, c.param) << c.body;
    EXPECT_NE(std::string(e.what()).find(c.message), std::string::npos)
        << c.body << " -> " << e.what();
    const json b = error_body(e);
    EXPECT_EQ(b["error"]["type"], "invalid_request_error");
    EXPECT_EQ(b["error"]["param"], c.param);
    EXPECT_TRUE(b["error"]["code"].is_null());
  }
}

TEST(ApiError, BodyShapeAndTypes) {
  const json b = error_body(
      ApiError(404, "no such model", "model", "invalid_request_error", "model_not_found"));
  EXPECT_EQ(b, json::parse(R"({"error": {"message": "no such model", "type":
      "invalid_request_error", "param": "model", "code": "model_not_found"}})"));
  EXPECT_TRUE(error_body("x", "server_error", "", "")["error"]["param"].is_null());
  EXPECT_EQ(error_type_for_status(413), "request_too_large");
  EXPECT_EQ(error_type_for_status(429), "rate_limit_error");
  EXPECT_EQ(error_type_for_status(503), "server_error");
  EXPECT_EQ(error_type_for_status(400), "invalid_request_error");
}

// Whether the request's grammar accepts exactly `text`.
bool grammar_accepts(const ApiRequest& r, const std::string& text) {
  structured::GrammarAutomaton a(r.grammar);
  const int32_t s = a.next(a.start(), text);
  return s != structured::GrammarAutomaton::kDead && a.can_end(s);
}

TEST(ApiRequest, StructuredOutputFields) {
  EXPECT_EQ(parse_request(Endpoint::Chat, R"({"messages": [{"role": "user", "content": "a"}],
                                             "response_format": {"type": "text"}})")
                .grammar,
            nullptr);
  // The schema's properties come out in the order written, not sorted.
  const ApiRequest r = parse_request(Endpoint::Chat, R"({
    "messages": [{"role": "user", "content": "a"}],
    "response_format": {"type": "json_schema", "json_schema": {"name": "x", "strict": true,
      "schema": {"type": "object", "properties": {"zeta": {"type": "integer"},
                                                  "alpha": {"type": "boolean"}},
                 "required": ["zeta", "alpha"]}}}})");
  ASSERT_NE(r.grammar, nullptr);
  EXPECT_TRUE(grammar_accepts(r, R"({"zeta": 1, "alpha": true})"));
  EXPECT_FALSE(grammar_accepts(r, R"({"alpha": true, "zeta": 1})"));
  const ApiRequest o = parse_request(Endpoint::Completion,
                                     R"({"prompt": "a", "response_format": {"type": "json_object"}})");
  EXPECT_TRUE(grammar_accepts(o, R"({"k": [1, "v"]})"));
  const ApiRequest g = parse_request(
      Endpoint::Completion, R"({"prompt": "a", "guided_json": "{\"enum\": [\"x\", 2]}"})");
  EXPECT_TRUE(grammar_accepts(g, "2"));
  const ApiRequest c = parse_request(
      Endpoint::Chat, R"({"messages": [{"role": "user", "content": "a"}],
                          "structured_outputs": {"choice": ["yes", "no"]}})");
  EXPECT_TRUE(grammar_accepts(c, "no"));
  EXPECT_FALSE(grammar_accepts(c, "maybe"));
  const ApiRequest re = parse_request(
      Endpoint::Completion, R"({"prompt": "a", "structured_outputs": {"regex": "[0-9]{2}"}})");
  EXPECT_TRUE(grammar_accepts(re, "42"));
}

TEST(ApiRequest, StructuredOutputErrorsNameTheField) {
  const ApiError e = error_of(Endpoint::Completion,
                              R"({"prompt": "a", "structured_outputs": {"grammar": "root ::= x"}})");
  EXPECT_EQ(e.status, 400);
  EXPECT_EQ(e.param, "structured_outputs.grammar");
  EXPECT_EQ(std::string(e.what()),
            "invalid structured_outputs.grammar: the rule 'x' is not defined (used in 'root')");
  EXPECT_EQ(error_of(Endpoint::Completion,
                     R"({"prompt": "a", "response_format": {"type": "json_schema"}})")
                .param,
            "response_format.json_schema");
  EXPECT_EQ(error_of(Endpoint::Completion, R"({"prompt": "a", "response_format":
      {"type": "json_schema", "json_schema": {"schema": {}}}})")
                .param,
            "response_format.json_schema.name");
  EXPECT_EQ(error_of(Endpoint::Completion, R"({"prompt": "a", "guided_regex": 5})").param,
            "guided_regex");
  EXPECT_EQ(error_of(Endpoint::Completion, R"({"prompt": "a", "guided_choice": []})").param,
            "guided_choice");
  EXPECT_EQ(error_of(Endpoint::Completion, R"({"prompt": "a", "guided_json": "{nope"})").param,
            "guided_json");
}

}  // namespace
}  // namespace parallm::serve
