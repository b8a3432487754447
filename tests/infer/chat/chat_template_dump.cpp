// chat_template_dump: renders every fixture tokenizer_config.json of a folder
// over every conversation of a JSON file, with add_generation_prompt false and
// true, and writes the results as JSON for compare_chat_templates.py, which
// renders the same with transformers' apply_chat_template and compares bytes.
// A config without chat_template renders with ChatTemplate::plain() (GPT-2).
// Usage: chat_template_dump <fixtures dir> <conversations.json> <out.json>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "infer/chat/chat_template.h"
#include "infer/chat/template_renderer.h"

using nlohmann::json;
using ojson = nlohmann::ordered_json;

namespace {
// A conversation message: role, content, and tool_calls / tool_call_id when given.
parallm::ChatMessage message_of(const ojson& m) {
  parallm::ChatMessage out{m["role"].get<std::string>(), m["content"].get<std::string>(), {}, {}};
  if (m.contains("tool_calls"))
    for (const ojson& c : m["tool_calls"])
      out.tool_calls.push_back({c["id"].get<std::string>(),
                                c["function"]["name"].get<std::string>(),
                                c["function"]["arguments"].dump()});
  if (m.contains("tool_call_id")) out.tool_call_id = m["tool_call_id"].get<std::string>();
  return out;
}
}  // namespace
namespace fs = std::filesystem;

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: chat_template_dump <fixtures dir> <conversations.json> <out.json>\n";
    return 2;
  }
  std::vector<fs::path> configs;
  for (const auto& entry : fs::directory_iterator(argv[1]))
    if (entry.path().extension() == ".json") configs.push_back(entry.path());
  std::sort(configs.begin(), configs.end());
  std::ifstream conv_in(argv[2]);
  // Ordered: a tool list and a call's arguments reach the template in the key order written.
  const ojson conversations = ojson::parse(conv_in);

  json fixtures = json::object();
  json renderings = json::array();
  for (const fs::path& path : configs) {
    const std::string name = path.stem().string();
    const parallm::ChatTemplate tmpl =
        parallm::ChatTemplate::from_config_file_or_plain(path.string());
    fixtures[name] = {{"source", tmpl.source()},
                      {"plain", tmpl.source() == parallm::ChatTemplate::kPlainSource}};
    for (const ojson& conv : conversations) {
      std::vector<parallm::ChatMessage> messages;
      for (const ojson& m : conv["messages"]) messages.push_back(message_of(m));
      const std::string tools = conv.contains("tools") ? conv["tools"].dump() : "";
      for (bool add_generation_prompt : {false, true}) {
        json r = {{"fixture", name},
                  {"conversation", conv["name"].get<std::string>()},
                  {"add_generation_prompt", add_generation_prompt}};
        try {
          const parallm::ChatPrompt prompt = tmpl.render(messages, add_generation_prompt, tools);
          r["text"] = prompt.text;
          r["starts_with_bos"] = prompt.starts_with_bos;
        } catch (const parallm::chat::TemplateRaised& e) {
          r["raised"] = e.message();
        } catch (const parallm::Error& e) {
          r["error"] = e.what();
        }
        renderings.push_back(std::move(r));
      }
    }
  }
  std::ofstream out(argv[3], std::ios::binary);
  out << json{{"fixtures", fixtures}, {"renderings", renderings}}.dump(1) << "\n";
  std::cout << "chat_template_dump: " << renderings.size() << " renderings of " << configs.size()
            << " templates written to " << argv[3] << "\n";
  return 0;
}
