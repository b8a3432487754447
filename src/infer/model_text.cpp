// The text side of a generating model (see model_text.h).
#include "infer/model_text.h"

#include <algorithm>
#include <filesystem>

#include "base/error.h"
#include "data/tokenizer/hf_tokenizer.h"
#include "io/gguf/gguf_tokenizer.h"

namespace parallm {

std::string tokenizer_dir(const ModelSource& source, const std::string& tokenizer_flag) {
  if (!tokenizer_flag.empty()) return tokenizer_flag;
  if (!source.gguf.empty()) return source.gguf;  // tokenizer.ggml.* in the file
  if (!source.hf_dir.empty() &&
      std::filesystem::exists(std::filesystem::path(source.hf_dir) / "tokenizer.json"))
    return source.hf_dir;
  return "";
}

namespace {
// A GGUF file's tokenizer and tokenizer_config.json fields (gguf_tokenizer.h).
std::unique_ptr<Tokenizer> load_gguf_tokenizer(const std::string& path) {
  const GgufTokenizerFiles files = gguf_tokenizer_files(GgufFile::open(path));
  const nlohmann::json& c = files.config;
  TokenizerConfig cfg;
  if (c.contains("bos_token")) cfg.bos_token = c["bos_token"].get<std::string>();
  if (c.contains("eos_token")) cfg.eos_token = c["eos_token"].get<std::string>();
  cfg.add_bos_token = c["add_bos_token"].get<bool>();
  cfg.add_eos_token = c["add_eos_token"].get<bool>();
  cfg.generation_eos_ids = files.eos_ids;
  return std::make_unique<HfTokenizer>(files.tokenizer, path, cfg);
}
}  // namespace

std::unique_ptr<Tokenizer> load_tokenizer_or_bytes(const std::string& dir) {
  if (is_gguf_path(dir)) return load_gguf_tokenizer(dir);
  return dir.empty() ? make_byte_tokenizer() : load_tokenizer(dir);
}

ChatTemplate load_chat_template(const std::string& dir) {
  if (is_gguf_path(dir)) {  // tokenizer.chat_template, else the plain one
    const GgufTokenizerFiles files = gguf_tokenizer_files(GgufFile::open(dir));
    return files.config.contains("chat_template")
               ? ChatTemplate::from_config_text(files.config.dump(), dir)
               : ChatTemplate::plain();
  }
  const std::string config = dir.empty() ? "" : dir + "/tokenizer_config.json";
  return !config.empty() && std::filesystem::exists(config)
             ? ChatTemplate::from_config_file_or_plain(config)
             : ChatTemplate::plain();
}

std::vector<int32_t> encode_chat(const Tokenizer& tok, const ChatTemplate& tmpl,
                                 const std::vector<ChatMessage>& conversation,
                                 std::string_view tools_json) {
  const ChatPrompt p = tmpl.render(conversation, true, tools_json);
  return tok.encode(p.text, !p.starts_with_bos);
}

std::vector<int32_t> end_of_sequence_ids(const std::vector<int32_t>& model_eos,
                                         const Tokenizer& tok, const std::string& dir) {
  std::vector<int32_t> ids = model_eos;
  if (!dir.empty())
    for (int32_t id : tok.eos_ids())
      if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
  return ids;
}

void check_tokenizer_fits(const Tokenizer& tok, const std::string& dir, int64_t model_vocab) {
  PX_CHECK(tok.vocab_size() <= model_vocab,
           "the tokenizer{} has {} ids but the model's vocabulary has {} rows",
           dir.empty() ? "" : " in '" + dir + "'", tok.vocab_size(), model_vocab);
}

}  // namespace parallm
