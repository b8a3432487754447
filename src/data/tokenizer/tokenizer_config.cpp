// Reading the optional JSON files of a Hugging Face directory.
#include "data/tokenizer/tokenizer_config.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "data/tokenizer/json_fields.h"

namespace parallm {

namespace {

std::optional<Json> read_optional_json(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::nullopt;
  std::ifstream in(path, std::ios::binary);
  PX_CHECK(in.good(), "cannot read {}", path.string());
  std::ostringstream ss;
  ss << in.rdbuf();
  try {
    return Json::parse(ss.str());
  } catch (const Json::exception& e) {
    PX_FAIL("{}: malformed JSON: {}", path.string(), e.what());
  }
}

std::optional<std::string> token_name(const Json& cfg, const char* key, const std::string& where) {
  auto it = cfg.find(key);
  if (it == cfg.end() || it->is_null()) return std::nullopt;
  if (it->is_string()) return it->get<std::string>();
  PX_CHECK(it->is_object() && it->contains("content") && (*it)["content"].is_string(),
           "{}.{}: expected a string or {{\"content\": ...}}, got {}", where, key, json_brief(*it));
  return (*it)["content"].get<std::string>();
}

std::optional<bool> opt_bool(const Json& cfg, const char* key, const std::string& where) {
  auto it = cfg.find(key);
  if (it == cfg.end() || it->is_null()) return std::nullopt;
  PX_CHECK(it->is_boolean(), "{}.{}: expected true or false, got {}", where, key, json_brief(*it));
  return it->get<bool>();
}

}  // namespace

TokenizerConfig read_tokenizer_config(const std::string& dir) {
  TokenizerConfig c;
  const std::filesystem::path root(dir);
  if (auto cfg = read_optional_json(root / "tokenizer_config.json")) {
    const std::string w = (root / "tokenizer_config.json").string();
    PX_CHECK(cfg->is_object(), "{}: expected an object", w);
    c.bos_token = token_name(*cfg, "bos_token", w);
    c.eos_token = token_name(*cfg, "eos_token", w);
    c.add_bos_token = opt_bool(*cfg, "add_bos_token", w);
    c.add_eos_token = opt_bool(*cfg, "add_eos_token", w);
  }
  if (auto gen = read_optional_json(root / "generation_config.json")) {
    const std::string w = (root / "generation_config.json").string();
    auto it = gen->is_object() ? gen->find("eos_token_id") : gen->end();
    if (gen->is_object() && it != gen->end() && !it->is_null()) {
      const Json list = it->is_array() ? *it : Json::array({*it});
      for (const Json& id : list) {
        PX_CHECK(id.is_number_integer(), "{}.eos_token_id: expected integers, got {}", w,
                 json_brief(*it));
        c.generation_eos_ids.push_back(id.get<int32_t>());
      }
    }
  }
  return c;
}

}  // namespace parallm
