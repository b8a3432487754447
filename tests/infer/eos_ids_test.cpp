// EOS ids outside the vocabulary (infer/eos_ids.h): dropped with one warning
// line each, duplicates kept once; config.json's ids read as written; and
// generate() runs to max_new_tokens with such an id, as transformers does.
#include "infer/eos_ids.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include "common/test_models.h"
#include "infer/generator.h"

namespace parallm {
namespace {

TEST(EosIds, OutsideTheVocabularyIsDroppedWithOneWarningEach) {
  std::ostringstream warn;
  EXPECT_EQ(eos_ids_in_vocab({50256, 3, 50256, -1, 3, 599}, 600, &warn),
            (std::vector<int32_t>{3, 599}));
  EXPECT_EQ(warn.str(),
            "warning: EOS id 50256 is outside the vocabulary (600 ids); generation will not stop "
            "at it\n"
            "warning: EOS id -1 is outside the vocabulary (600 ids); generation will not stop at "
            "it\n");
  EXPECT_EQ(eos_ids_in_vocab({7}, 600, nullptr), (std::vector<int32_t>{7}));
}

TEST(EosIds, ConfigJsonIdsAsWritten) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("eos_ids_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "config.json") << R"({"eos_token_id": [50256, 2, null]})";
  EXPECT_EQ(config_eos_ids({.hf_dir = dir.string()}), (std::vector<int32_t>{50256, 2}));
  std::ofstream(dir / "config.json") << R"({"vocab_size": 10})";
  EXPECT_TRUE(config_eos_ids({.hf_dir = dir.string()}).empty());
  EXPECT_TRUE(config_eos_ids({.checkpoint = dir.string()}).empty());
  std::filesystem::remove_all(dir);
}

TEST(EosIds, GenerateRunsOnWithAnIdOutsideTheVocabulary) {
  Allocator a;
  Transformer m(testing::tiny_gpt2(), a);  // vocabulary 1000
  m.params().init_random(1);
  GenerateOptions o;
  o.max_new_tokens = 6;
  o.sampling.temperature = 0.0;
  o.eos_ids = {50256};
  const std::vector<Generation> g = generate(m, {{1, 2, 3}}, o);
  EXPECT_EQ(g[0].tokens.size(), 6u);
  EXPECT_EQ(g[0].finish, FinishReason::Length);
}

}  // namespace
}  // namespace parallm
