// The EOS ids of a generation job (see eos_ids.h).
#include "infer/eos_ids.h"

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "infer/model_text.h"

namespace parallm {

std::vector<int32_t> config_eos_ids(const ModelSource& source) {
  std::vector<int32_t> ids;
  if (source.hf_dir.empty()) return ids;
  std::ifstream f(std::filesystem::path(source.hf_dir) / "config.json");
  const nlohmann::json j = nlohmann::json::parse(f, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("eos_token_id")) return ids;
  const nlohmann::json& e = j["eos_token_id"];
  // Values that are no id at all (null, text) end nothing, as in InferenceModel.
  auto add = [&](const nlohmann::json& v) {
    if (v.is_number_integer()) ids.push_back(static_cast<int32_t>(v.get<int64_t>()));
  };
  if (e.is_array())
    for (const auto& v : e) add(v);
  else
    add(e);
  return ids;
}

std::vector<int32_t> eos_ids_in_vocab(const std::vector<int32_t>& ids, int64_t vocab,
                                      std::ostream* warn) {
  std::vector<int32_t> kept, dropped;
  for (int32_t id : ids) {
    std::vector<int32_t>& to = id >= 0 && id < vocab ? kept : dropped;
    if (std::find(to.begin(), to.end(), id) == to.end()) to.push_back(id);
  }
  if (warn)
    for (int32_t id : dropped)
      *warn << fmt::format(
                   "warning: EOS id {} is outside the vocabulary ({} ids); generation will not "
                   "stop at it",
                   id, vocab)
            << std::endl;
  return kept;
}

std::vector<int32_t> generation_eos_ids(const ModelSource& source,
                                        const std::vector<int32_t>& model_eos,
                                        const Tokenizer& tok, const std::string& dir,
                                        int64_t vocab, std::ostream* warn) {
  std::vector<int32_t> ids = model_eos;
  for (int32_t id : config_eos_ids(source)) ids.push_back(id);
  for (int32_t id : end_of_sequence_ids({}, tok, dir)) ids.push_back(id);
  return eos_ids_in_vocab(ids, vocab, warn);
}

}  // namespace parallm
