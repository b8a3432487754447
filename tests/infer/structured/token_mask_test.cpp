// The token mask: a token that spans several grammar symbols, a character
// split across tokens, EOS only where the grammar may end, the constrained
// sequence ending when nothing more can follow, the trie walk equal to a
// brute-force check of every token at every state of random walks, and a
// real tokenizer.json (SentencePiece style: a decoder that strips the first
// space, byte-fallback tokens) read into token bytes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "data/tokenizer/tokenizer_test_files.h"
#include "infer/structured/byte_grammar.h"
#include "infer/structured/constrained_sequence.h"
#include "infer/structured/gbnf_parser.h"
#include "infer/structured/json_schema_grammar.h"
#include "infer/structured/token_mask.h"

namespace parallm::structured {
namespace {

// All 256 bytes, then pieces a byte-level BPE would learn (JSON punctuation
// runs, words with their space, and the first and last bytes of 你 (E4 BD
// A0) and é (C3 A9) apart); id 0 is EOS and has no bytes.
std::vector<std::string> test_vocab() {
  std::vector<std::string> v = {""};
  for (int b = 0; b < 256; ++b) v.push_back(std::string(1, static_cast<char>(b)));
  for (const char* s :
       {"{\"",   "\":",    "\": ",      "\",",      "\", \"", "\"}",          "}",     "[\"",
        "\"]",   ", ",     "true",      "false",    "null",   " true",        "name",  "age",
        "12",    "123",    "0.",        "\xE4\xBD", "\xA0",   "\xE4\xBD\xA0", "\xC3",  "\xA9\"",
        "hello", " world", "\"hello\"", "ab",       "abc",    "\\n",          "\\u00", "\"\n"})
    v.push_back(s);
  return v;
}

std::shared_ptr<const TokenVocabulary> vocab_of(std::vector<std::string> bytes) {
  return std::make_shared<const TokenVocabulary>(std::move(bytes), std::vector<int32_t>{0});
}

std::vector<int32_t> brute_force(const TokenVocabulary& v, GrammarAutomaton& a, int32_t state) {
  std::vector<int32_t> out;
  for (int32_t id = 0; id < v.size(); ++id) {
    const std::string& b = v.bytes(id);
    if (!b.empty() && a.next(state, b) != GrammarAutomaton::kDead) out.push_back(id);
  }
  if (a.can_end(state)) out.insert(out.end(), v.eos_ids().begin(), v.eos_ids().end());
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<int32_t> walk(const TokenVocabulary& v, GrammarAutomaton& a, int32_t state) {
  std::vector<int32_t> out;
  allowed_tokens(v, a, state, out);
  std::sort(out.begin(), out.end());
  return out;
}

int32_t id_of(const std::vector<std::string>& v, const std::string& s) {
  return static_cast<int32_t>(std::find(v.begin(), v.end(), s) - v.begin());
}

TEST(TokenMask, TokensSpanSymbolsAndSplitCharacters) {
  const std::vector<std::string> bytes = test_vocab();
  const auto vocab = vocab_of(bytes);
  GrammarAutomaton a(
      compile_grammar(parse_gbnf(R"(root ::= "{\"" [a-z]+ "\": \"" [^"]{1,3} "\"}")")));
  const std::vector<int32_t> at_start = walk(*vocab, a, a.start());
  // `{"` spans the brace and the quote; `{` alone is a prefix too.
  EXPECT_EQ(at_start, (std::vector<int32_t>{id_of(bytes, "{"), id_of(bytes, "{\"")}));
  int32_t s = a.next(a.start(), "{\"name");
  const std::vector<int32_t> after_key = walk(*vocab, a, s);
  EXPECT_TRUE(std::count(after_key.begin(), after_key.end(), id_of(bytes, "\": ")));
  EXPECT_FALSE(std::count(after_key.begin(), after_key.end(), id_of(bytes, "\",")));
  // 你 arrives as E4 BD then A0: each part is allowed where it fits, a lone
  // continuation byte is not allowed at the start of a character.
  s = a.next(a.start(), "{\"name\": \"");
  const std::vector<int32_t> in_value = walk(*vocab, a, s);
  EXPECT_TRUE(std::count(in_value.begin(), in_value.end(), id_of(bytes, "\xE4\xBD")));
  EXPECT_FALSE(std::count(in_value.begin(), in_value.end(), id_of(bytes, "\xA0")));
  const int32_t mid = a.next(s, "\xE4\xBD");
  const std::vector<int32_t> in_char = walk(*vocab, a, mid);
  const int32_t piece =
      static_cast<int32_t>(bytes.size()) - 1 -
      static_cast<int32_t>(std::find(bytes.rbegin(), bytes.rend(), "\xA0") - bytes.rbegin());
  // Only continuation bytes 80-BF may follow E4 BD: the 64 bytes, the A0
  // piece, and A9 + quote (it ends the character and the string).
  EXPECT_EQ(in_char.size(), 64u + 2);
  EXPECT_TRUE(std::count(in_char.begin(), in_char.end(), piece));
  EXPECT_TRUE(std::count(in_char.begin(), in_char.end(), id_of(bytes, "\xA9\"")));
  EXPECT_TRUE(std::all_of(in_char.begin(), in_char.end(), [&](int32_t id) {
    const unsigned char c = static_cast<unsigned char>(bytes[static_cast<size_t>(id)][0]);
    return c >= 0x80 && c <= 0xBF;
  }));
  // No EOS before the end; after "} only EOS.
  EXPECT_FALSE(std::count(in_value.begin(), in_value.end(), 0));
  const int32_t done = a.next(s, "\xC3\xA9\"}");
  ASSERT_NE(done, GrammarAutomaton::kDead);
  EXPECT_EQ(walk(*vocab, a, done), (std::vector<int32_t>{0}));
}

TEST(TokenMask, ConstrainedSequenceMasksAndEnds) {
  const std::vector<std::string> bytes = test_vocab();
  ConstrainedSequence seq(compile_grammar(parse_gbnf(R"(root ::= "ab" "c"?)")), vocab_of(bytes));
  std::vector<float> logits(bytes.size(), 1.0f), masked;
  EXPECT_EQ(seq.mask(logits, masked), 3u);  // a, ab, abc
  EXPECT_TRUE(std::isinf(masked[id_of(bytes, "b")]));
  EXPECT_EQ(masked[id_of(bytes, "abc")], 1.0f);
  EXPECT_TRUE(seq.advance(id_of(bytes, "ab")));
  EXPECT_TRUE(seq.can_end());
  EXPECT_FALSE(seq.complete());
  EXPECT_EQ(seq.mask(logits, masked), 2u);  // c, EOS
  EXPECT_FALSE(seq.advance(id_of(bytes, "ab")));
  EXPECT_TRUE(seq.advance(id_of(bytes, "c")));
  EXPECT_TRUE(seq.complete());
}

TEST(TokenMask, RepeatedStatesReuseTheirList) {
  const std::vector<std::string> bytes = test_vocab();
  const auto vocab = vocab_of(bytes);
  const auto g = compile_grammar(parse_gbnf(R"(root ::= [a-c]* "!")"));
  ConstrainedSequence seq(g, vocab);
  GrammarAutomaton a(g);
  std::vector<float> logits(bytes.size(), 0.0f), masked;
  seq.mask(logits, masked);
  const std::vector<int32_t> first = seq.allowed();
  EXPECT_EQ(std::vector<int32_t>(first.begin(), first.end()), [&] {
    std::vector<int32_t> w;
    allowed_tokens(*vocab, a, a.start(), w);
    return w;
  }());
  for (const char* t : {"a", "abc", "ab", "c"}) {  // the state comes back each time
    ASSERT_TRUE(seq.advance(id_of(bytes, t)));
    EXPECT_EQ(seq.mask(logits, masked), first.size());
    EXPECT_EQ(seq.allowed(), first);
  }
  ASSERT_TRUE(seq.advance(id_of(bytes, "!")));
  EXPECT_TRUE(seq.complete());
}

// Random walks through a JSON schema's grammar, comparing the trie walk
// with every token tried one by one at every state on the way.
TEST(TokenMask, TrieWalkEqualsBruteForce) {
  std::vector<std::string> bytes = test_vocab();
  std::mt19937 rng(7);
  const std::string alphabet = "{}[]\":, abcnrtuelfs0123456789.-\\\xE4\xBD\xA0\xC3\xA9";
  for (int i = 0; i < 2000; ++i) {  // random pieces, as a BPE vocabulary has
    std::string s;
    const int n = 2 + static_cast<int>(rng() % 5);
    for (int k = 0; k < n; ++k) s += alphabet[rng() % alphabet.size()];
    bytes.push_back(s);
  }
  const auto vocab = vocab_of(bytes);
  const auto g = compile_grammar(json_schema_grammar(nlohmann::ordered_json::parse(R"({
    "type": "object", "properties": {
      "a": {"type": "array", "items": {"type": "number"}, "maxItems": 3},
      "s": {"type": "string", "maxLength": 4},
      "e": {"enum": ["ab", "abc", null]},
      "o": {"type": "object", "properties": {"t": {"type": "boolean"}}}},
    "required": ["a", "s"]})")));
  int checked = 0;
  for (int run = 0; run < 30; ++run) {
    GrammarAutomaton a(g);
    int32_t s = a.start();
    for (int step = 0; step < 60; ++step) {
      const std::vector<int32_t> want = brute_force(*vocab, a, s);
      ASSERT_EQ(walk(*vocab, a, s), want) << "run " << run << " step " << step;
      ++checked;
      if (want.empty() || (want.size() == 1 && want[0] == 0)) break;
      const int32_t t = want[rng() % want.size()];
      if (t == 0) break;
      s = a.next(s, vocab->bytes(t));
    }
  }
  EXPECT_GT(checked, 300);
}

TEST(TokenMask, VocabularyFromASentencePieceTokenizer) {
  const TestDir dir("structured_sp");
  dir.write_tokenizer(sp_tokenizer_json());
  const std::unique_ptr<Tokenizer> tok = load_tokenizer(dir.path());
  const auto vocab = TokenVocabulary::from_tokenizer(*tok, 264, tok->eos_ids());
  EXPECT_EQ(vocab->bytes(262), " a");  // "▁a" keeps its space, first or not
  EXPECT_EQ(vocab->bytes(259), " ");
  EXPECT_EQ(vocab->bytes(3 + 0x41), "A");     // <0x41>
  EXPECT_EQ(vocab->bytes(3 + 0xE4), "\xE4");  // a lone byte of a character
  for (int32_t special : {0, 1, 2}) EXPECT_EQ(vocab->bytes(special), "");
  const auto g = compile_grammar(parse_gbnf(R"(root ::= "a" (" " [ab])* "." | "你")"));
  GrammarAutomaton a(g);
  for (const char* text : {"", "a", "a b", "a b a", "a b a.", "\xE4", "\xE4\xBD"}) {
    const int32_t s = a.next(a.start(), text);
    ASSERT_NE(s, GrammarAutomaton::kDead) << text;
    EXPECT_EQ(walk(*vocab, a, s), brute_force(*vocab, a, s)) << text;
  }
  // EOS (</s>, 2) only once the sentence is complete.
  const std::vector<int32_t> done = walk(*vocab, a, a.next(a.start(), "a b."));
  EXPECT_EQ(done, (std::vector<int32_t>{2}));
}

}  // namespace
}  // namespace parallm::structured
