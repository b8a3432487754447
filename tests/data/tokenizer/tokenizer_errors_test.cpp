// Bad tokenizer directories: each gives one Error naming the file, the field
// and the offending value. Also tokenizer_config.json's BOS/EOS handling.
#include <gtest/gtest.h>

#include "base/error.h"
#include "data/tokenizer/tokenizer.h"
#include "tokenizer_test_files.h"

namespace parallm {
namespace {

// The message of the Error load_tokenizer throws ("" when it loads).
std::string load_error(const std::string& dir) {
  try {
    load_tokenizer(dir);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

std::string error_for(const Json& j) {
  TestDir dir("errors");
  dir.write_tokenizer(j);
  return load_error(dir.path());
}

void expect_has(const std::string& msg, std::initializer_list<const char*> parts) {
  EXPECT_FALSE(msg.empty()) << "no error";
  for (const char* p : parts)
    EXPECT_NE(msg.find(p), std::string::npos) << msg << "\n  lacks: " << p;
}

TEST(TokenizerErrors, BaseFileLoads) { EXPECT_EQ(error_for(sp_tokenizer_json()), ""); }

TEST(TokenizerErrors, MissingOrMalformedFile) {
  TestDir dir("missing");
  expect_has(load_error(dir.path() + "/nope"), {"does not exist", "/nope"});
  expect_has(load_error(dir.path()), {"tokenizer.json", "missing"});
  dir.write_file("tokenizer.json", "{\"model\": [1, 2");
  expect_has(load_error(dir.path()), {"tokenizer.json", "malformed JSON"});
  dir.write_file("tokenizer.json", "{}");
  expect_has(load_error(dir.path()), {"tokenizer.json", "missing field 'model'"});
}

TEST(TokenizerErrors, UnknownComponentTypesAreNamed) {
  Json j = sp_tokenizer_json();
  j["model"]["type"] = "WordPiece";
  expect_has(error_for(j), {"tokenizer.json: model.type", "unsupported model type 'WordPiece'"});
  j = sp_tokenizer_json();
  j["pre_tokenizer"] = {{"type", "Whitespace"}};
  expect_has(error_for(j), {"pre_tokenizer", "unsupported pre-tokenizer type 'Whitespace'"});
  j = sp_tokenizer_json();
  j["normalizer"] = {{"type", "NFC"}};
  expect_has(error_for(j), {"normalizer", "unsupported normalizer type 'NFC'"});
  j = sp_tokenizer_json();
  j["decoder"]["decoders"][1] = {{"type", "WordPiece"}};
  expect_has(error_for(j), {"decoder.decoders[1]", "unsupported decoder type 'WordPiece'"});
  j = sp_tokenizer_json();
  j["post_processor"] = {{"type", "RobertaProcessing"}};
  expect_has(error_for(j),
             {"post_processor", "unsupported post-processor type 'RobertaProcessing'"});
}

TEST(TokenizerErrors, BadModelContents) {
  Json j = sp_tokenizer_json();
  j["model"]["merges"].push_back("\u2581 zz");
  expect_has(error_for(j), {"model.merges[2]", "token 'zz' is not in the vocabulary"});
  j = sp_tokenizer_json();
  j["model"]["merges"].push_back("a b c");
  expect_has(error_for(j), {"model.merges[2]", "one space", "'a b c'"});
  j = sp_tokenizer_json();
  j["model"]["merges"].push_back("a b");
  expect_has(error_for(j), {"model.merges[2]", "merged token 'ab' is not in the vocabulary"});
  j = sp_tokenizer_json();
  j["model"]["unk_token"] = "<oov>";
  expect_has(error_for(j), {"model.unk_token", "'<oov>'"});
  j = sp_tokenizer_json();
  j["model"]["vocab"]["a"] = "x";
  expect_has(error_for(j), {"model.vocab['a']", "expected an integer id", "\"x\""});
  j = sp_tokenizer_json();
  j["pre_tokenizer"] = {{"type", "Split"},
                        {"pattern", {{"Regex", "(\\p{L}"}}},
                        {"behavior", "Isolated"},
                        {"invert", false}};
  expect_has(error_for(j), {"pre_tokenizer", "invalid regex '(\\p{L}'"});
  j = sp_tokenizer_json();
  j["pre_tokenizer"]["prepend_scheme"] = "sometimes";
  expect_has(error_for(j), {"pre_tokenizer.prepend_scheme", "'sometimes'"});
}

TEST(TokenizerConfig, BosEosFromConfigAndTemplate) {
  TestDir dir("config");
  dir.write_tokenizer(sp_tokenizer_json());
  auto tok = load_tokenizer(dir.path());
  EXPECT_EQ(tok->bos_id(), 1);  // from the "<s> $A" template
  EXPECT_EQ(tok->eos_id(), 2);  // "</s>", a special added token
  EXPECT_EQ(tok->encode("a", true), (std::vector<int32_t>{1, 262}));
  // add_bos_token / add_eos_token rebuild the template, as transformers does.
  dir.write_file("tokenizer_config.json",
                 R"({"bos_token": {"content": "<s>"}, "eos_token": "</s>",
                     "add_bos_token": false, "add_eos_token": true})");
  dir.write_file("generation_config.json", R"({"eos_token_id": [2, 0]})");
  tok = load_tokenizer(dir.path());
  EXPECT_EQ(tok->encode("a", true), (std::vector<int32_t>{262, 2}));
  EXPECT_EQ(tok->eos_ids(), (std::vector<int32_t>{2, 0}));
  EXPECT_EQ(tok->decode(std::vector<int32_t>{1, 262, 2}, true), "a");
  dir.write_file("tokenizer_config.json", R"({"eos_token": "<eos>"})");
  expect_has(load_error(dir.path()), {"eos_token '<eos>' is not a token"});
  dir.write_file("tokenizer_config.json", R"({"add_bos_token": 1})");
  expect_has(load_error(dir.path()), {"tokenizer_config.json.add_bos_token", "true or false"});
}

}  // namespace
}  // namespace parallm
