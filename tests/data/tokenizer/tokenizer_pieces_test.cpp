// The pieces of the Hugging Face tokenizer: the GPT-2 byte table, BPE merges
// by rank, byte fallback and unk fusing, ignore_merges, UTF-8 hold-back in the
// stream decoder, added-token splitting, and shards written with a tokenizer.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "data/token_shard.h"
#include "data/tokenize_files.h"
#include "data/tokenizer/added_tokens.h"
#include "data/tokenizer/bpe_model.h"
#include "data/tokenizer/byte_level.h"
#include "data/tokenizer/stream_decoder.h"
#include "data/tokenizer/tokenizer.h"
#include "data/tokenizer/utf8.h"
#include "tokenizer_test_files.h"

namespace parallm {
namespace {

TEST(ByteLevelTable, MatchesGpt2) {
  const auto& t = byte_to_code_point();
  EXPECT_EQ(t['A'], U'A');
  EXPECT_EQ(t['!'], U'!');
  EXPECT_EQ(t[0xE9], U'é');   // printable Latin-1 maps to itself
  EXPECT_EQ(t[0x00], 0x100);  // the first non-printable byte
  EXPECT_EQ(t[' '], 0x120);   // 'Ġ'
  EXPECT_EQ(t['\n'], 0x10A);  // 'Ċ'
  EXPECT_EQ(t[0xAD], 0x143);  // soft hyphen is the last one moved
  std::set<char32_t> distinct(t.begin(), t.end());
  EXPECT_EQ(distinct.size(), 256u);
  std::string all;
  for (int b = 0; b < 256; ++b) all.push_back(static_cast<char>(b));
  std::string back;
  ASSERT_TRUE(byte_level_decode(byte_level_encode(all), back));
  EXPECT_EQ(back, all);
  EXPECT_EQ(byte_level_encode(" hi\n"), "\xC4\xA0hi\xC4\x8A");  // "Ġhi" + "Ċ"
  EXPECT_FALSE(byte_level_decode("\xE4\xB8\xAD", back));        // '中' is not in the table
}

Vocab vocab_of(std::initializer_list<std::string> tokens) {
  Vocab v;
  int32_t id = 0;
  for (const auto& t : tokens) v.emplace(t, id++);
  return v;
}

std::vector<int32_t> run(const BpeModel& m, std::string_view word) {
  std::vector<int32_t> out;
  m.tokenize(word, out);
  return out;
}

TEST(BpeModel, MergesLowestRankFirst) {
  // a=0 b=1 c=2 ab=3 bc=4 abc=5
  auto vocab = vocab_of({"a", "b", "c", "ab", "bc", "abc"});
  BpeModel bc_first(vocab, {{"b", "c"}, {"a", "b"}, {"ab", "c"}}, {}, "test");
  EXPECT_EQ(run(bc_first, "abc"), (std::vector<int32_t>{0, 4}));  // "a bc": no such merge
  BpeModel ab_first(vocab, {{"a", "b"}, {"b", "c"}, {"ab", "c"}}, {}, "test");
  EXPECT_EQ(run(ab_first, "abc"), (std::vector<int32_t>{5}));
  // Equal ranks: the leftmost pair merges first ("ab ab", not "a bab").
  EXPECT_EQ(run(ab_first, "abab"), (std::vector<int32_t>{3, 3}));
}

TEST(BpeModel, IgnoreMergesEmitsWholeVocabularyWords) {
  auto vocab = vocab_of({"a", "b", "c", "ab", "abc"});
  BpeModel plain(vocab, {{"a", "b"}}, {}, "test");
  EXPECT_EQ(run(plain, "abc"), (std::vector<int32_t>{3, 2}));
  BpeOptions o;
  o.ignore_merges = true;
  BpeModel ignoring(vocab, {{"a", "b"}}, o, "test");
  EXPECT_EQ(run(ignoring, "abc"), (std::vector<int32_t>{4}));
}

TEST(BpeModel, ByteFallbackAndUnk) {
  Vocab vocab = vocab_of({"<unk>", "a"});
  for (int b = 0; b < 256; ++b) vocab.emplace(fmt::format("<0x{:02X}>", b), 2 + b);
  BpeOptions o;
  o.unk_token = "<unk>";
  o.byte_fallback = true;
  BpeModel fb(vocab, {}, o, "test");
  // 'é' is C3 A9; '😀' is F0 9F 98 80.
  EXPECT_EQ(run(fb, "aé"), (std::vector<int32_t>{1, 2 + 0xC3, 2 + 0xA9}));
  EXPECT_EQ(run(fb, "😀"), (std::vector<int32_t>{2 + 0xF0, 2 + 0x9F, 2 + 0x98, 2 + 0x80}));
  o.byte_fallback = false;
  o.fuse_unk = true;
  BpeModel fused(vocab, {}, o, "test");
  EXPECT_EQ(run(fused, "aééa€"), (std::vector<int32_t>{1, 0, 1, 0}));
  o.fuse_unk = false;
  BpeModel unfused(vocab, {}, o, "test");
  EXPECT_EQ(run(unfused, "aéé"), (std::vector<int32_t>{1, 0, 0}));
}

TEST(Utf8, CompletePrefixHoldsOnlyUnfinishedCharacters) {
  EXPECT_EQ(utf8_complete_prefix("ab"), 2u);
  EXPECT_EQ(utf8_complete_prefix("a\xE4\xB8"), 1u);      // 2 of 3 bytes of '中'
  EXPECT_EQ(utf8_complete_prefix("a\xF0\x9F\x98"), 1u);  // 3 of 4 bytes of '😀'
  EXPECT_EQ(utf8_complete_prefix("a\xE4\xB8\xAD"), 4u);  // whole
  EXPECT_EQ(utf8_complete_prefix("a\xFF"), 2u);          // invalid: emitted (as U+FFFD)
  EXPECT_EQ(utf8_complete_prefix("a\xE4"
                                 "b"),
            3u);  // broken, not unfinished
  EXPECT_EQ(utf8_lossy("a\xFF"
                       "b"),
            "a\xEF\xBF\xBD"
            "b");
  EXPECT_EQ(utf8_lossy("\xE4\xB8"), "\xEF\xBF\xBD");  // one per maximal subpart
}

TEST(StreamDecoder, NeverEmitsHalfACharacter) {
  auto tok = make_byte_tokenizer();
  const std::string text = "é中😀!";
  std::string all;
  StreamDecoder stream(*tok, false);
  std::vector<std::string> pieces;
  for (int32_t id : tok->encode(text, false)) {
    pieces.push_back(stream.push(id));
    EXPECT_TRUE(utf8_valid(pieces.back()));
    all += pieces.back();
  }
  all += stream.flush();
  EXPECT_EQ(all, text);
  // é = 2 bytes, 中 = 3, 😀 = 4: text appears on each character's last byte.
  const std::vector<std::string> want = {"", "é", "", "", "中", "", "", "", "😀", "!"};
  EXPECT_EQ(pieces, want);
  StreamDecoder cut(*tok, false);
  EXPECT_EQ(cut.push(0xF0), "");
  EXPECT_EQ(cut.flush(), "\xEF\xBF\xBD");  // an unfinished character at the end
}

TEST(StreamDecoder, ByteFallbackTokensJoinAcrossPushes) {
  TestDir dir("stream_fallback");
  dir.write_tokenizer(sp_tokenizer_json());
  auto tok = load_tokenizer(dir.path());
  const std::vector<int32_t> ids = tok->encode("a中b", false);
  StreamDecoder stream(*tok, false);
  std::string all;
  int empty = 0;
  for (int32_t id : ids) {
    const std::string p = stream.push(id);
    EXPECT_TRUE(utf8_valid(p));
    empty += p.empty();
    all += p;
  }
  EXPECT_EQ(all + stream.flush(), tok->decode(ids, false));
  EXPECT_EQ(all, "a中b");
  EXPECT_EQ(empty, 2);  // the first two of the three byte tokens of '中'
}

TEST(AddedTokens, SplitRespectsFlags) {
  AddedVocabulary v({{.id = 10, .content = "<s>", .special = true},
                     {.id = 11, .content = "<mask>", .lstrip = true, .special = true},
                     {.id = 12, .content = "tok", .single_word = true, .normalized = false},
                     {.id = 13, .content = "<s>x", .normalized = true}});
  auto ids = [&](std::string_view text) {
    std::vector<std::string> out;
    for (const TextPiece& p : v.split(text, false)) {
      out.push_back(p.id >= 0 ? std::to_string(p.id)
                              : fmt::format("'{}'", text.substr(p.begin, p.end - p.begin)));
    }
    return out;
  };
  EXPECT_EQ(ids("a<s>b"), (std::vector<std::string>{"'a'", "10", "'b'"}));
  EXPECT_EQ(ids("a  <mask>b"), (std::vector<std::string>{"'a'", "11", "'b'"}));
  EXPECT_EQ(ids("a tok b"), (std::vector<std::string>{"'a '", "12", "' b'"}));
  EXPECT_EQ(ids("atok b"), (std::vector<std::string>{"'atok b'"}));  // not a single word
  // <s>x is normalized=true: not matched in raw text; <s> is.
  EXPECT_EQ(ids("<s>x"), (std::vector<std::string>{"10", "'x'"}));
}

TEST(TokenizeFiles, ShardWidthFollowsVocabularySize) {
  TestDir dir("shard_width");
  const std::string doc = dir.write_file("doc.txt", "hello hello");
  for (bool big : {false, true}) {
    Json j = sp_tokenizer_json();
    // An added token with a large id makes the vocabulary need uint32.
    if (big) j["added_tokens"].push_back({{"id", 70000}, {"content", "<big>"}, {"special", true}});
    dir.write_tokenizer(j);
    auto tok = load_tokenizer(dir.path());
    EXPECT_EQ(tok->vocab_size(), big ? 70001 : 259 + 5);
    const std::string prefix = dir.path() + (big ? "/big" : "/small");
    TokenizeSummary s = tokenize_files({doc, doc}, prefix, 0.0, *tok);
    TokenShard shard(s.train_path);
    EXPECT_EQ(shard.format(), big ? ShardFormat::U32 : ShardFormat::U16);
    // <s> doc </s> <s> doc: the template's BOS per document, EOS between.
    const std::vector<int32_t> one = tok->encode("hello hello", true);
    ASSERT_EQ(shard.size(), static_cast<int64_t>(2 * one.size() + 1));
    EXPECT_EQ(shard.at(0), *tok->bos_id());
    EXPECT_EQ(shard.at(static_cast<int64_t>(one.size())), *tok->eos_id());
  }
}

TEST(TokenizeFiles, ByteTokenizerDefaultUnchanged) {
  TestDir dir("byte_default");
  const std::string a = dir.write_file("a.txt", "ab");
  const std::string b = dir.write_file("b.txt", "");
  TokenizeSummary s = tokenize_files({a, b, a}, dir.path() + "/out", 0.0);
  TokenShard shard(s.train_path);
  std::vector<int32_t> got(static_cast<size_t>(shard.size()));
  shard.read(0, shard.size(), got.data());
  EXPECT_EQ(got, (std::vector<int32_t>{'a', 'b', 256, 256, 'a', 'b'}));
}

}  // namespace
}  // namespace parallm
