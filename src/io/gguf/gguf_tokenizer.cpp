// GGUF tokenizer metadata -> tokenizer.json + config (see gguf_tokenizer.h).
#include "io/gguf/gguf_tokenizer.h"

#include <algorithm>
#include <unordered_map>

#include "base/error.h"

namespace parallm {

namespace {

using Json = nlohmann::json;

// llama.cpp's token types (gguf.TokenType).
constexpr int kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4;

const char* kGpt2Regex =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
const char* kLlama3Regex =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

Json byte_level_pre_tokenizer(const GgufFile& f) {
  const std::string pre = f.opt_string("tokenizer.ggml.pre").value_or("default");
  if (pre == "default" || pre == "gpt-2")
    return {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true},
            {"use_regex", true}};
  if (pre == "llama-bpe" || pre == "llama3" || pre == "llama-v3")
    return {{"type", "Sequence"},
            {"pretokenizers",
             Json::array({{{"type", "Split"},
                           {"pattern", {{"Regex", kLlama3Regex}}},
                           {"behavior", "Isolated"},
                           {"invert", false}},
                          {{"type", "ByteLevel"},
                           {"add_prefix_space", false},
                           {"trim_offsets", true},
                           {"use_regex", false}}})}};
  PX_FAIL("{}: tokenizer.ggml.pre '{}' is not supported (parallm maps 'default', 'gpt-2' and "
          "'llama-bpe' to their Hugging Face pre-tokenizers)",
          f.path(), pre);
}

// Code-point boundaries of a UTF-8 string (byte offsets, 0 and size excluded).
std::vector<size_t> char_boundaries(const std::string& s) {
  std::vector<size_t> b;
  for (size_t i = 1; i < s.size(); ++i)
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) b.push_back(i);
  return b;
}

// transformers' generate_merges(vocab, vocab_scores): for each token in id
// order, its splits into two vocabulary tokens (ordered by their ids), then
// all of them stably sorted by the token's score, longer left then longer
// right piece first, descending.
Json spm_merges(const std::vector<std::string>& tokens, const std::vector<double>& scores,
                const std::unordered_map<std::string, int32_t>& vocab) {
  struct Merge {
    int32_t l, r;
    double score;
    size_t ll, lr;  // lengths in code points
  };
  std::vector<Merge> merges;
  for (size_t t = 0; t < tokens.size(); ++t) {
    const std::string& m = tokens[t];
    if (vocab.at(m) != static_cast<int32_t>(t)) continue;  // a duplicate: the dict kept the last
    const std::vector<size_t> cuts = char_boundaries(m);
    std::vector<Merge> local;
    for (size_t k = 0; k < cuts.size(); ++k) {
      auto l = vocab.find(m.substr(0, cuts[k])), r = vocab.find(m.substr(cuts[k]));
      if (l != vocab.end() && r != vocab.end())
        local.push_back({l->second, r->second, scores[t], k + 1, cuts.size() - k});
    }
    std::sort(local.begin(), local.end(), [](const Merge& a, const Merge& b) {
      return a.l != b.l ? a.l < b.l : a.r < b.r;
    });
    merges.insert(merges.end(), local.begin(), local.end());
  }
  std::stable_sort(merges.begin(), merges.end(), [](const Merge& a, const Merge& b) {
    if (a.score != b.score) return a.score > b.score;
    if (a.ll != b.ll) return a.ll > b.ll;
    return a.lr > b.lr;
  });
  Json out = Json::array();
  for (const Merge& m : merges)
    out.push_back(Json::array({tokens[static_cast<size_t>(m.l)], tokens[static_cast<size_t>(m.r)]}));
  return out;
}

std::optional<int32_t> token_id(const GgufFile& f, const std::string& key, size_t n) {
  const auto id = f.opt_int(key);
  if (!id) return std::nullopt;
  PX_CHECK(*id >= 0 && static_cast<size_t>(*id) < n, "{}: {} is {}, outside the {} tokens",
           f.path(), key, *id, n);
  return static_cast<int32_t>(*id);
}

}  // namespace

std::vector<int32_t> gguf_eos_ids(const GgufFile& f) {
  const Json* tj = f.opt_array("tokenizer.ggml.tokens", GgufValueType::STRING);
  const size_t n = tj != nullptr ? tj->size() : 0;
  std::vector<int32_t> ids;
  for (const char* key : {"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id",
                          "tokenizer.ggml.eom_token_id"})
    if (const auto id = token_id(f, key, n);
        id && std::find(ids.begin(), ids.end(), *id) == ids.end())
      ids.push_back(*id);
  return ids;
}

GgufTokenizerFiles gguf_tokenizer_files(const GgufFile& f) {
  const std::string model = f.need_string("tokenizer.ggml.model");
  PX_CHECK(model == "gpt2" || model == "llama",
           "{}: tokenizer.ggml.model '{}' is not supported (parallm reads 'gpt2', byte-level BPE, "
           "and 'llama', SentencePiece)",
           f.path(), model);
  const Json* tj = f.opt_array("tokenizer.ggml.tokens", GgufValueType::STRING);
  PX_CHECK(tj != nullptr, "{}: missing metadata key 'tokenizer.ggml.tokens'", f.path());
  std::vector<std::string> tokens = tj->get<std::vector<std::string>>();
  const size_t n = tokens.size();
  std::vector<int> types(n, kNormal);
  if (const Json* a = f.opt_array("tokenizer.ggml.token_type", GgufValueType::I32)) {
    PX_CHECK(a->size() == n, "{}: tokenizer.ggml.token_type has {} entries for {} tokens",
             f.path(), a->size(), n);
    types = a->get<std::vector<int>>();
  }
  std::unordered_map<std::string, int32_t> vocab;
  Json vocab_json = Json::object(), added = Json::array();
  for (size_t i = 0; i < n; ++i) {
    vocab[tokens[i]] = static_cast<int32_t>(i);
    const int t = types[i];
    if (t == kControl || t == kUnknown || t == kUserDefined)
      added.push_back({{"id", i},
                       {"content", tokens[i]},
                       {"single_word", false},
                       {"lstrip", false},
                       {"rstrip", false},
                       {"normalized", t == kUserDefined},
                       {"special", t != kUserDefined}});
  }
  for (const auto& [tok, id] : vocab) vocab_json[tok] = id;

  GgufTokenizerFiles out;
  Json& cfg = out.config;
  const auto bos = token_id(f, "tokenizer.ggml.bos_token_id", n);
  const auto eos = token_id(f, "tokenizer.ggml.eos_token_id", n);
  const auto unk = token_id(f, "tokenizer.ggml.unknown_token_id", n);
  if (bos) cfg["bos_token"] = tokens[static_cast<size_t>(*bos)];
  if (eos) cfg["eos_token"] = tokens[static_cast<size_t>(*eos)];
  // llama.cpp's defaults: SentencePiece adds the BOS, byte-level BPE does not.
  const bool add_bos = f.opt_bool("tokenizer.ggml.add_bos_token").value_or(model == "llama");
  const bool add_eos = f.opt_bool("tokenizer.ggml.add_eos_token").value_or(false);
  PX_CHECK(!add_bos || bos, "{}: tokenizer.ggml.add_bos_token is set but there is no "
           "tokenizer.ggml.bos_token_id", f.path());
  PX_CHECK(!add_eos || eos, "{}: tokenizer.ggml.add_eos_token is set but there is no "
           "tokenizer.ggml.eos_token_id", f.path());
  cfg["add_bos_token"] = add_bos;
  cfg["add_eos_token"] = add_eos;
  if (const auto tmpl = f.opt_string("tokenizer.chat_template")) cfg["chat_template"] = *tmpl;
  out.eos_ids = gguf_eos_ids(f);

  Json bpe = {{"type", "BPE"}, {"dropout", nullptr}, {"continuing_subword_prefix", nullptr},
              {"end_of_word_suffix", nullptr}, {"vocab", vocab_json}};
  Json& tok = out.tokenizer;
  tok = {{"version", "1.0"}, {"truncation", nullptr}, {"padding", nullptr},
         {"added_tokens", added}, {"post_processor", nullptr}};
  if (model == "gpt2") {
    const Json* merges = f.opt_array("tokenizer.ggml.merges", GgufValueType::STRING);
    PX_CHECK(merges != nullptr, "{}: a gpt2 tokenizer needs tokenizer.ggml.merges", f.path());
    bpe["merges"] = *merges;
    bpe["unk_token"] = nullptr;
    bpe["fuse_unk"] = false;
    bpe["byte_fallback"] = false;
    tok["normalizer"] = nullptr;
    tok["pre_tokenizer"] = byte_level_pre_tokenizer(f);
    tok["decoder"] = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true},
                      {"use_regex", true}};
  } else {
    const Json* sj = f.opt_array("tokenizer.ggml.scores", GgufValueType::F32);
    PX_CHECK(sj != nullptr && sj->size() == n,
             "{}: a llama tokenizer needs tokenizer.ggml.scores, one per token ({} tokens)",
             f.path(), n);
    bpe["merges"] = spm_merges(tokens, sj->get<std::vector<double>>(), vocab);
    bpe["unk_token"] = unk ? Json(tokens[static_cast<size_t>(*unk)]) : Json(nullptr);
    bpe["fuse_unk"] = true;
    bpe["byte_fallback"] = true;
    const std::string space = "\xe2\x96\x81";  // ▁
    tok["normalizer"] = {
        {"type", "Sequence"},
        {"normalizers", Json::array({{{"type", "Prepend"}, {"prepend", space}},
                                     {{"type", "Replace"},
                                      {"pattern", {{"String", " "}}},
                                      {"content", space}}})}};
    tok["pre_tokenizer"] = nullptr;
    tok["decoder"] = {
        {"type", "Sequence"},
        {"decoders", Json::array({{{"type", "Replace"}, {"pattern", {{"String", space}}},
                                   {"content", " "}},
                                  {{"type", "ByteFallback"}},
                                  {{"type", "Fuse"}},
                                  {{"type", "Strip"}, {"content", " "}, {"start", 1},
                                   {"stop", 0}}})}};
  }
  tok["model"] = bpe;
  return out;
}

}  // namespace parallm
