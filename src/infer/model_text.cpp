// The text side of a generating model (see model_text.h).
#include "infer/model_text.h"

#include <algorithm>
#include <filesystem>

#include "base/error.h"

namespace parallm {

std::string tokenizer_dir(const ModelSource& source, const std::string& tokenizer_flag) {
  if (!tokenizer_flag.empty()) return tokenizer_flag;
  if (!source.hf_dir.empty() &&
      std::filesystem::exists(std::filesystem::path(source.hf_dir) / "tokenizer.json"))
    return source.hf_dir;
  return "";
}

std::unique_ptr<Tokenizer> load_tokenizer_or_bytes(const std::string& dir) {
  return dir.empty() ? make_byte_tokenizer() : load_tokenizer(dir);
}

ChatTemplate load_chat_template(const std::string& dir) {
  const std::string config = dir.empty() ? "" : dir + "/tokenizer_config.json";
  return !config.empty() && std::filesystem::exists(config)
             ? ChatTemplate::from_config_file_or_plain(config)
             : ChatTemplate::plain();
}

std::vector<int32_t> encode_chat(const Tokenizer& tok, const ChatTemplate& tmpl,
                                 const std::vector<ChatMessage>& conversation) {
  const ChatPrompt p = tmpl.render(conversation, true);
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
