// tool_call_output and the streamed pieces of a call (see tool_call_output.h).
#include "infer/serve/tool_call_output.h"

#include <fmt/core.h>

#include <functional>

#include "infer/serve/tool_call_text.h"

namespace parallm::serve {

namespace {
// Mistral's templates refuse a call id that is not 9 alphanumerics (as vLLM
// makes them); other families get "call_" + the response id's tail + numbers.
std::string call_id(ToolFormat format, const std::string& response_id, size_t choice, size_t k) {
  const size_t dash = response_id.rfind('-');
  const std::string tail = dash == std::string::npos ? response_id : response_id.substr(dash + 1);
  if (format != ToolFormat::Mistral) return fmt::format("call_{}_{}_{}", tail, choice, k);
  static constexpr char kAlnum[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  uint64_t h = std::hash<std::string>{}(fmt::format("{}/{}/{}", tail, choice, k));
  std::string id;
  for (int i = 0; i < 9; ++i, h /= 62) id += kAlnum[h % 62];
  return id;
}
}  // namespace

ToolCallOutput tool_call_output(const ApiRequest& req, const std::string& text, bool cut_by_length,
                                const std::string& response_id, size_t choice) {
  ToolCallOutput out;
  out.content = text;
  if (!req.tools.active() || cut_by_length) return out;
  ToolCallParse p = parse_tool_calls(req.tools.format, text, req.tools.tools);
  if (p.calls.empty()) return out;
  for (size_t k = 0; k < p.calls.size(); ++k)
    out.calls.push_back(
        {{"id", call_id(req.tools.format, response_id, choice, k)},
         {"type", "function"},
         {"function", {{"name", p.calls[k].name}, {"arguments", p.calls[k].arguments}}}});
  out.content = std::move(p.content);
  return out;
}

nlohmann::json tool_call_header_delta(const nlohmann::json& call, size_t index) {
  return {{"index", index},
          {"id", call["id"]},
          {"type", "function"},
          {"function", {{"name", call["function"]["name"]}, {"arguments", ""}}}};
}

nlohmann::json tool_call_arguments_delta(const nlohmann::json& call, size_t index) {
  return {{"index", index}, {"function", {{"arguments", call["function"]["arguments"]}}}};
}

}  // namespace parallm::serve
