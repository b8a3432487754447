// A model out as GGUF (see export_gguf.h).
#include "infer/export_gguf.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

#include "base/error.h"
#include "infer/model_text.h"
#include "infer/perplexity.h"
#include "io/gguf/quant_recipe.h"

namespace parallm {

GgufExportReport export_model_gguf(const ModelSource& source, const std::string& tokenizer,
                                   const std::string& quantize, const std::string& path) {
  PX_CHECK(source.gguf.empty(), "export --gguf: the model is already a GGUF file");
  if (!quantize.empty()) quant_preset_from_name(quantize);  // a bad name fails before loading
  GgufExportTokenizer t;
  t.dir = tokenizer_dir(source, tokenizer);
  if (!t.dir.empty()) {
    const std::unique_ptr<Tokenizer> tok = load_tokenizer_or_bytes(t.dir);
    t.bos = tok->bos_id();
    t.eos = tok->eos_id();
    t.add_bos = added_bos(*tok).has_value();
    // The template as written (a string), none when the directory has none.
    std::ifstream cf(std::filesystem::path(t.dir) / "tokenizer_config.json");
    const nlohmann::json c = nlohmann::json::parse(cf, nullptr, false);
    if (!c.is_discarded() && c.is_object() && c.contains("chat_template") &&
        c["chat_template"].is_string())
      t.chat_template = c["chat_template"].get<std::string>();
  }
  ModelSource src = source;
  src.quantize.clear();
  InferenceModel im(src, {}, Precision::FP32, nullptr);
  if (!t.dir.empty()) {
    const std::unique_ptr<Tokenizer> tok = load_tokenizer_or_bytes(t.dir);
    check_tokenizer_fits(*tok, t.dir, im.model().config().vocab_size);
  }
  const std::string from = source.hf_dir.empty() ? source.checkpoint : source.hf_dir;
  std::filesystem::path name = std::filesystem::path(from).lexically_normal();
  if (name.filename().empty()) name = name.parent_path();
  return export_gguf(im.model(), t, quantize, name.filename().string(), path);
}

}  // namespace parallm
