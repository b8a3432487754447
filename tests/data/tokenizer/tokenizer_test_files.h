// Test helpers for tokenizers: a scratch directory removed on exit, and a tiny
// SentencePiece-style tokenizer.json (Metaspace, byte fallback with all 256
// <0xNN> tokens, "<s> $A") that tests edit to make each bad-input case.
// Invariant: sp_tokenizer_json() loads cleanly; ids: <unk> 0, <s> 1, </s> 2,
// <0x00>..<0xFF> 3..258, then ▁ a b ▁a ▁b (259..263).
#pragma once
#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "data/tokenizer/json_fields.h"

namespace parallm {

class TestDir {
 public:
  explicit TestDir(const std::string& name)
      : path_((std::filesystem::temp_directory_path() /
               fmt::format("parallm_tok_{}_{}", name, ::getpid()))
                  .string()) {
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TestDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }
  std::string write_file(const std::string& name, const std::string& text) const {
    const std::string p = path_ + "/" + name;
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }
  void write_tokenizer(const Json& j) const { write_file("tokenizer.json", j.dump()); }

 private:
  std::string path_;
};

inline Json sp_tokenizer_json() {
  Json vocab = {{"<unk>", 0}, {"<s>", 1}, {"</s>", 2}};
  for (int b = 0; b < 256; ++b) vocab[fmt::format("<0x{:02X}>", b)] = 3 + b;
  int next = 259;
  for (const char* t : {"\u2581", "a", "b", "\u2581a", "\u2581b"}) vocab[t] = next++;
  auto special = [](int id, const char* content) {
    return Json{{"id", id},        {"content", content},  {"single_word", false}, {"lstrip", false},
                {"rstrip", false}, {"normalized", false}, {"special", true}};
  };
  return Json{
      {"version", "1.0"},
      {"added_tokens", Json::array({special(0, "<unk>"), special(1, "<s>"), special(2, "</s>")})},
      {"normalizer", nullptr},
      {"pre_tokenizer",
       {{"type", "Metaspace"},
        {"replacement", "\u2581"},
        {"prepend_scheme", "first"},
        {"split", true}}},
      {"post_processor",
       {{"type", "TemplateProcessing"},
        {"single", Json::array({{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}},
                                {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}})},
        {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {1}}, {"tokens", {"<s>"}}}}}}}},
      {"decoder",
       {{"type", "Sequence"},
        {"decoders",
         Json::array({{{"type", "Replace"}, {"pattern", {{"String", "\u2581"}}}, {"content", " "}},
                      {{"type", "ByteFallback"}},
                      {{"type", "Fuse"}},
                      {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}})}}},
      {"model",
       {{"type", "BPE"},
        {"dropout", nullptr},
        {"unk_token", "<unk>"},
        {"fuse_unk", true},
        {"byte_fallback", true},
        {"vocab", vocab},
        {"merges", Json::array({"\u2581 a", "\u2581 b"})}}}};
}

}  // namespace parallm
