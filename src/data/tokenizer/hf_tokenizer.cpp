// HfTokenizer: construction reads every component of tokenizer.json (an
// unknown type is an error naming it); encode/decode follow the pipeline of
// the header. load_tokenizer is the directory entry point.
#include "data/tokenizer/hf_tokenizer.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "data/tokenizer/utf8.h"

namespace parallm {

namespace {

const Json& optional_field(const Json& j, const char* key) {
  static const Json null_json;  // immutable: stands for an absent field
  auto it = j.find(key);
  return it == j.end() ? null_json : *it;
}

const Json& checked_root(const Json& j, const std::string& where) {
  PX_CHECK(j.is_object(), "{}: expected a JSON object at the top level", where);
  return j;
}

}  // namespace

HfTokenizer::HfTokenizer(const Json& j, const std::string& where, const TokenizerConfig& config)
    : added_(AddedVocabulary::from_json(optional_field(checked_root(j, where), "added_tokens"),
                                        where + ": added_tokens")),
      normalizer_(make_normalizer(optional_field(j, "normalizer"), where + ": normalizer")),
      pre_tokenizer_(
          make_pre_tokenizer(optional_field(j, "pre_tokenizer"), where + ": pre_tokenizer")),
      model_(BpeModel::from_json(json_field(j, "model", where), where + ": model")),
      decoder_(make_decoder(optional_field(j, "decoder"), where + ": decoder")),
      template_(
          make_post_processor(optional_field(j, "post_processor"), where + ": post_processor")) {
  vocab_size_ = static_cast<int64_t>(model_.max_id()) + 1;
  for (const AddedToken& t : added_.tokens()) {
    vocab_size_ = std::max<int64_t>(vocab_size_, static_cast<int64_t>(t.id) + 1);
  }
  for (const auto* list : {&template_.prefix, &template_.suffix}) {
    for (int32_t id : *list) {
      PX_CHECK(id >= 0 && id < vocab_size_,
               "{}: post_processor: special token id {} is outside the vocabulary (size {})", where,
               id, vocab_size_);
    }
  }
  resolve_special_tokens(config, where);
}

void HfTokenizer::resolve_special_tokens(const TokenizerConfig& config, const std::string& where) {
  auto lookup = [&](const std::string& name, const char* field) {
    auto id = token_to_id(name);
    PX_CHECK(id.has_value(), "tokenizer_config.json: {} '{}' is not a token of {}", field, name,
             where);
    return *id;
  };
  if (config.bos_token) bos_id_ = lookup(*config.bos_token, "bos_token");
  if (config.eos_token) eos_id_ = lookup(*config.eos_token, "eos_token");
  // Without a config, the template says it: the token before $A is the BOS,
  // the one after it the EOS.
  if (!bos_id_ && template_.prefix.size() == 1) bos_id_ = template_.prefix[0];
  if (!eos_id_ && template_.suffix.size() == 1) eos_id_ = template_.suffix[0];
  if (!eos_id_) {
    for (const char* name : {"<|endoftext|>", "</s>", "<|end_of_text|>"}) {
      const AddedToken* t = added_.find(std::string_view(name));
      if (t != nullptr && t->special) {
        eos_id_ = t->id;
        break;
      }
    }
  }
  // transformers rebuilds the template from add_bos_token / add_eos_token
  // when the config sets them (LlamaTokenizerFast); follow the same rule.
  if (config.add_bos_token || config.add_eos_token) {
    template_ = {};
    if (config.add_bos_token.value_or(false)) {
      PX_CHECK(bos_id_.has_value(),
               "tokenizer_config.json: add_bos_token is true but no bos_token");
      template_.prefix.push_back(*bos_id_);
    }
    if (config.add_eos_token.value_or(false)) {
      PX_CHECK(eos_id_.has_value(),
               "tokenizer_config.json: add_eos_token is true but no eos_token");
      template_.suffix.push_back(*eos_id_);
    }
  }
  if (eos_id_) eos_ids_.push_back(*eos_id_);
  for (int32_t id : config.generation_eos_ids) {
    if (std::find(eos_ids_.begin(), eos_ids_.end(), id) == eos_ids_.end()) eos_ids_.push_back(id);
  }
}

void HfTokenizer::encode_piece(std::string_view piece, bool at_text_start,
                               std::vector<int32_t>& out) const {
  const std::string normalized =
      normalizer_ ? normalizer_->normalize(std::string(piece)) : std::string(piece);
  for (const TextPiece& p : added_.split(normalized, /*normalized=*/true)) {
    if (p.id >= 0) {
      out.push_back(p.id);
      continue;
    }
    std::vector<PreToken> pieces{
        {normalized.substr(p.begin, p.end - p.begin), at_text_start && p.begin == 0}};
    if (pre_tokenizer_) pre_tokenizer_->pre_tokenize(pieces);
    for (const PreToken& t : pieces) model_.tokenize(t.text, out);
  }
}

std::vector<int32_t> HfTokenizer::encode(std::string_view text, bool add_special_tokens) const {
  std::vector<int32_t> out;
  if (add_special_tokens) out = template_.prefix;
  for (const TextPiece& p : added_.split(text, /*normalized=*/false)) {
    if (p.id >= 0) {
      out.push_back(p.id);
    } else {
      encode_piece(text.substr(p.begin, p.end - p.begin), p.begin == 0, out);
    }
  }
  if (add_special_tokens) out.insert(out.end(), template_.suffix.begin(), template_.suffix.end());
  return out;
}

std::string HfTokenizer::decode_impl(std::span<const int32_t> ids, bool skip_special,
                                     bool raw) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int32_t id : ids) {
    if (const AddedToken* t = added_.find(id)) {
      if (!(skip_special && t->special)) tokens.push_back(t->content);
    } else if (const std::string* s = model_.id_to_token(id)) {
      tokens.push_back(*s);
    }
  }
  std::string out;
  if (decoder_) {
    decoder_->decode_chain(tokens, raw);
    for (const std::string& t : tokens) out += t;
  } else {
    for (size_t i = 0; i < tokens.size(); ++i) out += (i > 0 ? " " : "") + tokens[i];
  }
  return out;
}

std::string HfTokenizer::decode(std::span<const int32_t> ids, bool skip_special_tokens) const {
  return decode_impl(ids, skip_special_tokens, false);
}

std::string HfTokenizer::decode_bytes(std::span<const int32_t> ids,
                                      bool skip_special_tokens) const {
  return decode_impl(ids, skip_special_tokens, true);
}

std::optional<int32_t> HfTokenizer::token_to_id(std::string_view token) const {
  if (const AddedToken* t = added_.find(token)) return t->id;
  return model_.token_to_id(token);
}

std::optional<std::string> HfTokenizer::id_to_token(int32_t id) const {
  if (const AddedToken* t = added_.find(id)) return t->content;
  if (const std::string* s = model_.id_to_token(id)) return *s;
  return std::nullopt;
}

bool HfTokenizer::is_special(int32_t id) const {
  const AddedToken* t = added_.find(id);
  return t != nullptr && t->special;
}

std::unique_ptr<Tokenizer> load_tokenizer(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  // A path to the tokenizer.json itself is accepted too.
  fs::path root(dir);
  fs::path file = root / "tokenizer.json";
  if (fs::is_regular_file(root, ec)) {
    file = root;
    root = root.parent_path();
  }
  PX_CHECK(fs::exists(root, ec), "tokenizer directory {} does not exist", dir);
  PX_CHECK(fs::is_regular_file(file, ec),
           "{}: missing (a Hugging Face tokenizer directory holds "
           "tokenizer.json)",
           file.string());
  std::ifstream in(file, std::ios::binary);
  PX_CHECK(in.good(), "{}: cannot open for reading", file.string());
  std::ostringstream ss;
  ss << in.rdbuf();
  Json j;
  try {
    j = Json::parse(ss.str());
  } catch (const Json::exception& e) {
    PX_FAIL("{}: malformed JSON: {}", file.string(), e.what());
  }
  const TokenizerConfig config = read_tokenizer_config(root.string());
  return std::make_unique<HfTokenizer>(j, file.string(), config);
}

}  // namespace parallm
