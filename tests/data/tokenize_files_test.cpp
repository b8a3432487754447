// tokenize_files end to end: text files -> train/val shards -> DataLoader.
#include "data/tokenize_files.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "base/error.h"
#include "common/test_util.h"
#include "data/byte_tokenizer.h"
#include "data/data_loader.h"
#include "data/megatron_dataset.h"
#include "data/token_shard.h"
#include "data/tokenizer/tokenizer.h"

namespace parallm {
namespace {

namespace fs = std::filesystem;

using testing::TempDir;

std::vector<int32_t> read_all(const std::string& path) {
  TokenShard s(path);
  std::vector<int32_t> t(static_cast<size_t>(s.size()));
  s.read(0, s.size(), t.data());
  return t;
}

TEST(TokenizeFiles, WritesTrainAndValShards) {
  TempDir d;
  std::string a = d.write("a.txt", "hello world\n");
  std::string b = d.write("b.txt", "");
  std::string c = d.write("c.txt", "second \xC3\xA9 document");
  TokenizeSummary s = tokenize_files({a, b, c}, d.file("out"), 0.25);
  const std::string all_text = "hello world\n<|endoftext|><|endoftext|>second \xC3\xA9 document";
  const int64_t n = 12 + 1 + 0 + 1 + 18;
  EXPECT_EQ(s.documents, 3);
  EXPECT_EQ(s.input_bytes, 30);
  EXPECT_EQ(s.train_path, d.file("out_train.bin"));
  EXPECT_EQ(s.val_path, d.file("out_val.bin"));
  EXPECT_EQ(s.val_tokens, 8);  // round(0.25 * 32)
  EXPECT_EQ(s.train_tokens + s.val_tokens, n);
  std::vector<int32_t> train = read_all(s.train_path), val = read_all(s.val_path);
  EXPECT_EQ(TokenShard(s.train_path).format(), ShardFormat::U16);
  train.insert(train.end(), val.begin(), val.end());
  EXPECT_EQ(ByteTokenizer::decode(train), all_text);
  EXPECT_EQ(ByteTokenizer::decode(val), "document");  // the tail

  DataLoader dl({s.train_path}, 8, 1, true);
  dl.validate_vocab(ByteTokenizer::kVocabSize);
  EXPECT_EQ(dl.max_token(), ByteTokenizer::kEndOfText);
}

TEST(TokenizeFiles, ZeroValFractionWritesNoValFile) {
  TempDir d;
  TokenizeSummary s = tokenize_files({d.write("a.txt", "abc")}, d.file("x"), 0.0);
  EXPECT_EQ(s.train_tokens, 3);
  EXPECT_EQ(s.val_tokens, 0);
  EXPECT_TRUE(s.val_path.empty());
  EXPECT_FALSE(fs::exists(d.file("x_val.bin")));
  // A tiny positive fraction still yields one val token; train keeps one.
  s = tokenize_files({d.write("b.txt", "ab")}, d.file("y"), 0.01);
  EXPECT_EQ(s.train_tokens, 1);
  EXPECT_EQ(s.val_tokens, 1);
  s = tokenize_files({d.write("c.txt", "ab")}, d.file("z"), 0.99);
  EXPECT_EQ(s.train_tokens, 1);
}

TEST(TokenizeFiles, CreatesTheOutputDirectory) {
  TempDir d;
  TokenizeSummary s = tokenize_files({d.write("a.txt", "abcdef")}, d.file("new/sub/x"), 0.5);
  EXPECT_TRUE(fs::exists(s.train_path));
  EXPECT_TRUE(fs::exists(s.val_path));
}

TEST(TokenizeFiles, MissingInputLeavesNoOutput) {
  TempDir d;
  std::string a = d.write("a.txt", "some text");
  try {
    tokenize_files({a, d.file("missing.txt")}, d.file("out"), 0.1);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("cannot read input text file " + d.file("missing.txt")), std::string::npos)
        << m;
  }
  EXPECT_THROW(tokenize_files({a, d.path.string()}, d.file("out"), 0.1), Error);  // a directory
  EXPECT_THROW(tokenize_files({a}, d.file("out"), 1.0), Error);
  EXPECT_THROW(tokenize_files({d.write("e.txt", "")}, d.file("out"), 0.0), Error);
  for (const auto& e : fs::directory_iterator(d.path)) {
    EXPECT_EQ(e.path().extension(), ".txt") << e.path();  // nothing else was written
  }
}

TEST(TokenizeFiles, MegatronFormatWritesOneEodTerminatedDocumentPerInput) {
  TempDir d;
  std::string a = d.write("a.txt", "hello world\n");
  std::string b = d.write("b.txt", "");
  std::string c = d.write("c.txt", "second doc");
  // 13 + 11 = 24 tokens; val = round(0.25 * 24) = 6: the tail of c.txt.
  TokenizeSummary s = tokenize_files({a, b, c}, d.file("out"), 0.25, *make_byte_tokenizer(),
                                     TokenizeFormat::Megatron);
  EXPECT_EQ(s.train_path, d.file("out_train"));
  EXPECT_EQ(s.val_path, d.file("out_val"));
  EXPECT_EQ(s.train_tokens, 18);
  EXPECT_EQ(s.val_tokens, 6);
  MegatronDataset train(s.train_path), val(s.val_path);
  EXPECT_EQ(train.dtype(), MegatronDType::U16);
  ASSERT_EQ(train.num_documents(), 2);  // the empty input is no document
  EXPECT_EQ(ByteTokenizer::decode(train.sequence(0)), "hello world\n<|endoftext|>");
  EXPECT_EQ(ByteTokenizer::decode(train.sequence(1)), "secon");  // cut by the val split
  ASSERT_EQ(val.num_documents(), 1);
  EXPECT_EQ(ByteTokenizer::decode(val.sequence(0)), "d doc<|endoftext|>");

  // Without a val split the last document keeps its EOD, and training reads the prefix.
  TokenizeSummary whole =
      tokenize_files({a, c}, d.file("w"), 0.0, *make_byte_tokenizer(), TokenizeFormat::Megatron);
  EXPECT_TRUE(whole.val_path.empty());
  MegatronDataset w(whole.train_path);
  EXPECT_EQ(w.num_sequences(), 2);
  EXPECT_EQ(ByteTokenizer::decode(w.sequence(1)), "second doc<|endoftext|>");
  DataLoader dl({whole.train_path}, 4, 1, true);
  dl.validate_vocab(ByteTokenizer::kVocabSize);
  EXPECT_EQ(dl.num_tokens(), 24);
  EXPECT_EQ(dl.max_token(), ByteTokenizer::kEndOfText);
}

}  // namespace
}  // namespace parallm
