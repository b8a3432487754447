// ByteTokenizer: round trips on arbitrary bytes, EOT handling, padding ids.
#include "data/byte_tokenizer.h"

#include <gtest/gtest.h>

namespace parallm {

TEST(ByteTokenizer, RoundTripsEveryByte) {
  std::string s;
  for (int c = 0; c < 256; ++c) s.push_back(static_cast<char>(c));
  s += "héllo, wörld \xF0\x9F\x98\x80";  // multi-byte UTF-8 stays as bytes
  std::vector<int32_t> t = ByteTokenizer::encode(s);
  ASSERT_EQ(t.size(), s.size());
  for (int c = 0; c < 256; ++c) EXPECT_EQ(t[c], c);  // bytes >= 0x80 stay positive
  EXPECT_EQ(ByteTokenizer::decode(t), s);
  EXPECT_TRUE(ByteTokenizer::encode("").empty());
}

TEST(ByteTokenizer, DocumentsAreJoinedByEndOfText) {
  std::vector<std::string> docs = {"ab", "", "c"};
  std::vector<int32_t> t = ByteTokenizer::encode_documents(docs);
  EXPECT_EQ(t, (std::vector<int32_t>{'a', 'b', 256, 256, 'c'}));
  EXPECT_EQ(ByteTokenizer::decode(t), "ab<|endoftext|><|endoftext|>c");
  EXPECT_TRUE(ByteTokenizer::encode_documents({}).empty());
}

TEST(ByteTokenizer, IdsOutsideTheVocabDecodeToNothing) {
  EXPECT_EQ(ByteTokenizer::kVocabSize, 257);
  std::vector<int32_t> t = {'h', 300, 'i', -1, ByteTokenizer::kEndOfText};
  EXPECT_EQ(ByteTokenizer::decode(t), "hi<|endoftext|>");
  EXPECT_EQ(ByteTokenizer::decode_token(257), "");
  EXPECT_EQ(ByteTokenizer::decode_token('x'), "x");
  EXPECT_EQ(ByteTokenizer::decode_token(256), "<|endoftext|>");
}

}  // namespace parallm
