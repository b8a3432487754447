// OpenAI response bodies (see api_response.h).
#include "infer/serve/api_response.h"

#include <cmath>
#include <functional>

#include "data/tokenizer/utf8.h"
#include "infer/serve/tool_call_output.h"

namespace parallm::serve {

namespace {

double finite_logprob(double lp) { return std::isfinite(lp) ? lp : -9999.0; }

// A token as text (special tokens spelled out) and its raw bytes.
struct TokenText {
  std::string text;
  std::vector<int> bytes;
};
TokenText token_text(const Tokenizer& tok, int32_t id) {
  const int32_t ids[1] = {id};
  const std::string raw = tok.decode_bytes(ids, false);
  TokenText t{utf8_lossy(raw), {}};
  for (unsigned char c : raw) t.bytes.push_back(c);
  return t;
}

nlohmann::json chat_token(const Tokenizer& tok, int32_t id, double logprob) {
  TokenText t = token_text(tok, id);
  return {{"token", std::move(t.text)},
          {"logprob", finite_logprob(logprob)},
          {"bytes", std::move(t.bytes)}};
}

}  // namespace

nlohmann::json usage_json(const Usage& u) {
  nlohmann::json j{{"prompt_tokens", u.prompt_tokens},
                   {"completion_tokens", u.completion_tokens},
                   {"total_tokens", u.prompt_tokens + u.completion_tokens}};
  if (u.cached_prompt_tokens > 0)
    j["prompt_tokens_details"] = {{"cached_tokens", u.cached_prompt_tokens}};
  return j;
}

const char* api_finish_reason(FinishReason r) {
  return r == FinishReason::Length ? "length" : "stop";
}

nlohmann::json chat_logprobs(const Tokenizer& tok, const std::vector<SampledToken>& tokens,
                             size_t from, size_t to) {
  nlohmann::json content = nlohmann::json::array();
  for (size_t i = from; i < to; ++i) {
    const SampledToken& s = tokens[i];
    nlohmann::json e = chat_token(tok, s.token, s.logprob);
    nlohmann::json top = nlohmann::json::array();
    for (const TokenLogprob& t : s.top) top.push_back(chat_token(tok, t.token, t.logprob));
    e["top_logprobs"] = std::move(top);
    content.push_back(std::move(e));
  }
  return {{"content", std::move(content)}};
}

nlohmann::json completion_logprobs(const Tokenizer& tok, const ChoiceText& choice, size_t from,
                                   size_t to) {
  nlohmann::json tokens = nlohmann::json::array(), lps = nlohmann::json::array(),
                 tops = nlohmann::json::array(), offsets = nlohmann::json::array();
  for (size_t i = from; i < to; ++i) {
    const SampledToken& s = choice.tokens()[i];
    tokens.push_back(token_text(tok, s.token).text);
    lps.push_back(finite_logprob(s.logprob));
    // Two ids may spell the same text; the more likely one (first) stays.
    nlohmann::json top = nlohmann::json::object();
    for (const TokenLogprob& t : s.top) {
      const std::string text = token_text(tok, t.token).text;
      if (!top.contains(text)) top[text] = finite_logprob(t.logprob);
    }
    tops.push_back(std::move(top));
    offsets.push_back(choice.text_offset(i));
  }
  return {{"tokens", std::move(tokens)},
          {"token_logprobs", std::move(lps)},
          {"top_logprobs", std::move(tops)},
          {"text_offset", std::move(offsets)}};
}

namespace {
// The body of a finished call, either endpoint: the meta, `object`, usage,
// and per choice its index and finish reason plus what `fields` adds (the
// message or the text, and the logprobs).
nlohmann::json final_body(const ResponseMeta& meta, const char* object,
                          const std::vector<ChoiceText>& choices, const Usage& usage,
                          const std::function<void(const ChoiceText&, nlohmann::json&)>& fields) {
  nlohmann::json cs = nlohmann::json::array();
  for (size_t i = 0; i < choices.size(); ++i) {
    nlohmann::json c{{"index", i}, {"finish_reason", api_finish_reason(choices[i].finish())}};
    fields(choices[i], c);
    cs.push_back(std::move(c));
  }
  return {{"id", meta.id},       {"object", object},         {"created", meta.created},
          {"model", meta.model}, {"choices", std::move(cs)}, {"usage", usage_json(usage)}};
}
}  // namespace

nlohmann::json chat_completion_body(const ResponseMeta& meta, const Tokenizer& tok,
                                    const ApiRequest& req, const std::vector<ChoiceText>& choices,
                                    const Usage& usage) {
  return final_body(
      meta, "chat.completion", choices, usage, [&](const ChoiceText& c, nlohmann::json& out) {
        const ToolCallOutput t =
            tool_call_output(req, c.final_text(), c.finish() == FinishReason::Length, meta.id,
                             out["index"].get<size_t>());
        out["message"] = {{"role", "assistant"},
                          {"content", t.content ? nlohmann::json(*t.content) : nlohmann::json()}};
        if (!t.calls.empty()) {
          out["message"]["tool_calls"] = t.calls;
          out["finish_reason"] = "tool_calls";
        }
        out["logprobs"] =
            req.logprobs ? chat_logprobs(tok, c.tokens(), 0, c.tokens().size()) : nlohmann::json();
      });
}

nlohmann::json text_completion_body(const ResponseMeta& meta, const Tokenizer& tok,
                                    const ApiRequest& req, const std::vector<ChoiceText>& choices,
                                    const Usage& usage) {
  return final_body(
      meta, "text_completion", choices, usage, [&](const ChoiceText& c, nlohmann::json& out) {
        out["text"] = c.final_text();
        out["logprobs"] =
            req.logprobs ? completion_logprobs(tok, c, 0, c.tokens().size()) : nlohmann::json();
      });
}

std::string dump_body(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace parallm::serve
