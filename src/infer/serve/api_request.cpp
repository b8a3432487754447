// The OpenAI request parsers (see api_request.h). Ranges follow the OpenAI
// API reference where it states one, else SamplingParams::validate.
#include "infer/serve/api_request.h"

#include <fmt/core.h>

#include <limits>

#include "infer/serve/api_error.h"
#include "infer/serve/request_fields.h"
#include "infer/serve/structured_fields.h"

namespace parallm::serve {

namespace {

constexpr int64_t kIntMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kIntMin = std::numeric_limits<int64_t>::min();

// Fields both endpoints share: sampling, n, stop, stream, limits.
void parse_common(const RequestFields& f, ApiRequest& r) {
  r.model = f.string("model").value_or("");
  if (auto v = f.integer("max_tokens", 1, kIntMax)) r.max_tokens = *v;
  if (auto v = f.integer("max_completion_tokens", 1, kIntMax)) r.max_tokens = *v;
  SamplingParams& s = r.sampling;
  s.temperature = f.number("temperature", 0.0, 2.0).value_or(1.0);
  s.top_p = f.number("top_p", 0.0, 1.0).value_or(1.0);
  if (s.top_p == 0.0) f.fail("top_p", "must be > 0 (1: off), got 0");
  // vLLM's convention: -1 (and 0) turn top-k off.
  s.top_k = std::max<int64_t>(0, f.integer("top_k", -1, kIntMax).value_or(0));
  s.min_p = f.number("min_p", 0.0, 1.0).value_or(0.0);
  s.presence_penalty = f.number("presence_penalty", -2.0, 2.0).value_or(0.0);
  s.frequency_penalty = f.number("frequency_penalty", -2.0, 2.0).value_or(0.0);
  s.repetition_penalty = f.number("repetition_penalty", 0.0, 1e9).value_or(1.0);
  if (s.repetition_penalty == 0.0) f.fail("repetition_penalty", "must be > 0 (1: off), got 0");
  if (auto seed = f.integer("seed", kIntMin, kIntMax)) {
    s.seed = static_cast<uint64_t>(*seed);
    r.seed_given = true;
  }
  r.n = f.integer("n", 1, kMaxChoices).value_or(1);
  if (auto best_of = f.integer("best_of", 1, kMaxChoices); best_of && *best_of != r.n)
    f.fail("best_of", fmt::format("only best_of = n ({}) is supported, got {}", r.n, *best_of));

  if (const nlohmann::json* stop = f.find("stop")) {
    if (stop->is_string()) {
      r.stop.push_back(stop->get<std::string>());
    } else if (stop->is_array()) {
      for (const auto& s1 : *stop) {
        if (!s1.is_string())
          f.fail("stop", "expected a string or an array of strings, got an array holding " +
                             json_type_name(s1));
        r.stop.push_back(s1.get<std::string>());
      }
    } else {
      f.fail("stop", "expected a string or an array of strings, got " + json_type_name(*stop));
    }
    if (r.stop.size() > kMaxStopStrings)
      f.fail("stop",
             fmt::format("at most {} stop strings, got {}", kMaxStopStrings, r.stop.size()));
    for (const std::string& s1 : r.stop)
      if (s1.empty()) f.fail("stop", "a stop string may not be empty");
  }

  r.stream = f.boolean("stream").value_or(false);
  if (const nlohmann::json* so = f.find("stream_options")) {
    if (!so->is_object())
      f.fail("stream_options", "expected an object, got " + json_type_name(*so));
    r.include_usage =
        RequestFields(*so, "stream_options.").boolean("include_usage").value_or(false);
  }
  if (const nlohmann::json* bias = f.find("logit_bias"); bias && !bias->empty())
    f.fail("logit_bias", "is not supported");
}

// A message's content: a string, or a list of {"type": "text", "text": ...}.
std::string message_content(const RequestFields& m, const std::string& role) {
  const nlohmann::json* c = m.find("content");
  if (!c) {
    if (role == "assistant") return "";  // an assistant turn may carry only tool calls
    m.fail("content", "is required");
  }
  if (c->is_string()) return c->get<std::string>();
  if (!c->is_array())
    m.fail("content", "expected a string or an array of content parts, got " + json_type_name(*c));
  std::string text;
  for (size_t i = 0; i < c->size(); ++i) {
    const nlohmann::json& part = (*c)[i];
    const std::string where = fmt::format("content[{}]", i);
    if (!part.is_object()) m.fail(where, "expected an object, got " + json_type_name(part));
    const RequestFields p(part, m.path(where) + ".");
    const std::string type = p.string("type").value_or("");
    if (type != "text")
      p.fail("type", type.empty()
                         ? "is required"
                         : "content parts of type '" + type + "' are not supported (only 'text')");
    const std::optional<std::string> t = p.string("text");
    if (!t) p.fail("text", "is required");
    text += *t;
  }
  return text;
}

std::vector<ChatMessage> parse_messages(const RequestFields& f) {
  const nlohmann::json* ms = f.find("messages");
  if (!ms) f.fail("messages", "is required");
  if (!ms->is_array()) f.fail("messages", "expected an array, got " + json_type_name(*ms));
  if (ms->empty()) f.fail("messages", "must hold at least one message");
  std::vector<ChatMessage> out;
  for (size_t i = 0; i < ms->size(); ++i) {
    const nlohmann::json& m = (*ms)[i];
    const std::string where = fmt::format("messages[{}]", i);
    if (!m.is_object()) f.fail(where, "expected an object, got " + json_type_name(m));
    const RequestFields mf(m, where + ".");
    std::optional<std::string> role = mf.string("role");
    if (!role) mf.fail("role", "is required");
    if (*role == "developer") role = "system";  // OpenAI's newer name for it
    if (*role != "system" && *role != "user" && *role != "assistant" && *role != "tool")
      mf.fail("role", "must be 'system', 'user', 'assistant' or 'tool', got '" + *role + "'");
    ChatMessage msg{*role, message_content(mf, *role), {}, {}};
    if (*role == "assistant") msg.tool_calls = parse_message_tool_calls(mf);
    if (*role == "tool") {
      const std::optional<std::string> id = mf.string("tool_call_id");
      if (!id) mf.fail("tool_call_id", "is required in a 'tool' message");
      msg.tool_call_id = *id;
    }
    out.push_back(std::move(msg));
  }
  return out;
}

// A list of token ids, each a non-negative integer.
std::vector<int32_t> token_ids(const RequestFields& f, const nlohmann::json& a,
                               const std::string& where) {
  std::vector<int32_t> ids;
  for (const auto& t : a) {
    if (!t.is_number_integer() || t.get<int64_t>() < 0 ||
        t.get<int64_t>() > std::numeric_limits<int32_t>::max())
      f.fail(where,
             "token ids must be non-negative integers, got " +
                 (t.is_number_integer() ? std::to_string(t.get<int64_t>()) : json_type_name(t)));
    ids.push_back(t.get<int32_t>());
  }
  return ids;
}

// prompt: a string, a list of strings, a list of ids or a list of id lists.
std::vector<PromptInput> parse_prompts(const RequestFields& f) {
  const nlohmann::json* p = f.find("prompt");
  if (!p) f.fail("prompt", "is required");
  const std::string expected =
      "expected a string, an array of strings, an array of token ids or an array of them";
  if (p->is_string()) return {{p->get<std::string>(), {}, false}};
  if (!p->is_array()) f.fail("prompt", expected + ", got " + json_type_name(*p));
  if (p->empty()) f.fail("prompt", "must not be an empty array");
  if ((*p)[0].is_number_integer()) return {{"", token_ids(f, *p, "prompt"), true}};
  std::vector<PromptInput> out;
  for (size_t i = 0; i < p->size(); ++i) {
    const nlohmann::json& e = (*p)[i];
    if (e.is_string()) {
      out.push_back({e.get<std::string>(), {}, false});
    } else if (e.is_array()) {
      out.push_back({"", token_ids(f, e, fmt::format("prompt[{}]", i)), true});
    } else {
      f.fail("prompt", expected + ", got an array holding " + json_type_name(e));
    }
  }
  return out;
}

}  // namespace

ApiRequest parse_chat_request(const nlohmann::json& body, const nlohmann::ordered_json* ordered) {
  const RequestFields f(body);
  ApiRequest r;
  r.endpoint = Endpoint::Chat;
  r.messages = parse_messages(f);
  parse_common(f, r);
  r.logprobs = f.boolean("logprobs").value_or(false);
  const int64_t top = f.integer("top_logprobs", 0, kMaxTopLogprobs).value_or(0);
  if (top > 0 && !r.logprobs) f.fail("top_logprobs", "needs logprobs to be true");
  r.sampling.logprobs = static_cast<int>(top);
  r.sampling.token_logprob = r.logprobs;  // nobody reads it otherwise
  r.tools =
      parse_tool_fields(f, ordered && ordered->contains("tools") ? &(*ordered)["tools"] : nullptr);
  r.grammar = structured_output_grammar(f, ordered);
  if (r.grammar && r.tools.constrained())
    f.fail("tool_choice",
           "a required tool call and a structured-output field both constrain "
           "the output; give one");
  return r;
}

ApiRequest parse_completion_request(const nlohmann::json& body,
                                    const nlohmann::ordered_json* ordered) {
  const RequestFields f(body);
  ApiRequest r;
  r.endpoint = Endpoint::Completion;
  r.prompts = parse_prompts(f);
  parse_common(f, r);
  if (!r.max_tokens) r.max_tokens = 16;  // the completions API's default
  if (auto lp = f.integer("logprobs", 0, kMaxTopLogprobs)) {
    r.logprobs = true;
    r.sampling.logprobs = static_cast<int>(*lp);
  }
  r.sampling.token_logprob = r.logprobs;  // nobody reads it otherwise
  if (f.boolean("echo").value_or(false)) f.fail("echo", "echo is not supported");
  if (const auto suffix = f.string("suffix"); suffix && !suffix->empty())
    f.fail("suffix", "suffix is not supported");
  r.grammar = structured_output_grammar(f, ordered);
  return r;
}

ApiRequest parse_request(Endpoint endpoint, const std::string& text) {
  nlohmann::json body = nlohmann::json::parse(text, nullptr, false);
  if (body.is_discarded()) throw ApiError(400, "the request body is not valid JSON");
  if (!body.is_object())
    throw ApiError(400, "the request body must be a JSON object, got " + json_type_name(body));
  // Key order matters only to a JSON schema: parse again keeping it then.
  nlohmann::ordered_json ordered;
  const bool constrained = body.contains("response_format") ||
                           body.contains("structured_outputs") || body.contains("guided_json") ||
                           body.contains("tools");
  if (constrained) ordered = nlohmann::ordered_json::parse(text, nullptr, false);
  const nlohmann::ordered_json* o = constrained ? &ordered : nullptr;
  return endpoint == Endpoint::Chat ? parse_chat_request(body, o)
                                    : parse_completion_request(body, o);
}

}  // namespace parallm::serve
