// The grammar engine on its own: GBNF parsing (and its errors), UTF-8
// classes, repeats, left recursion refused, the regex and JSON-schema
// compilers (each output checked by running the automaton over texts that
// must and must not match).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <random>

#include "base/error.h"
#include "common/test_util.h"
#include "infer/structured/byte_grammar.h"
#include "infer/structured/gbnf_parser.h"
#include "infer/structured/grammar_automaton.h"
#include "infer/structured/json_schema_grammar.h"
#include "infer/structured/regex_grammar.h"

namespace parallm::structured {
namespace {

using testing::error_of;

// Whether the grammar accepts exactly `text` (the whole of it, then ends).
bool accepts(const Grammar& g, const std::string& text) {
  GrammarAutomaton a(compile_grammar(g));
  const int32_t s = a.next(a.start(), text);
  return s != GrammarAutomaton::kDead && a.can_end(s);
}

// Whether `text` is a prefix of something the grammar accepts.
bool prefix_ok(const Grammar& g, const std::string& text) {
  GrammarAutomaton a(compile_grammar(g));
  return a.next(a.start(), text) != GrammarAutomaton::kDead;
}

TEST(Gbnf, LiteralsClassesRepeatsAndRules) {
  const Grammar g = parse_gbnf(R"(
    # a comment
    root ::= greeting " " name{1,2} ("!" | "?")*
    greeting ::= "hi" | "hello"
    name ::= [A-Z] [a-z]+
  )");
  EXPECT_TRUE(accepts(g, "hi Bob"));
  EXPECT_TRUE(accepts(g, "hello BobAnn!?!"));
  EXPECT_FALSE(accepts(g, "hello BobAnnCy"));  // {1,2}
  EXPECT_FALSE(accepts(g, "hi bob"));
  EXPECT_FALSE(accepts(g, "hi B"));  // [a-z]+ needs one
  EXPECT_TRUE(prefix_ok(g, "hel"));
}

TEST(Gbnf, EscapesNegationDotAndUnicode) {
  const Grammar g = parse_gbnf(R"(root ::= "\x41\u00e9" [^a-c\n] . "\U0001F600" [α-ω]{2})");
  EXPECT_TRUE(accepts(g, "Aéd€😀αω"));
  EXPECT_FALSE(accepts(g, "Aébx😀αω"));  // b is in the negated class
  EXPECT_FALSE(accepts(g, "Aé\nx😀αω"));
  // A class never takes a partial or invalid UTF-8 sequence.
  EXPECT_TRUE(prefix_ok(g, "Aéd\xE2\x82"));        // the first two bytes of €
  EXPECT_FALSE(prefix_ok(g, "Aéd\xE2\x28"));       // not a continuation byte
  EXPECT_FALSE(prefix_ok(g, "Aédx\xED\xA0\x80"));  // a surrogate
}

TEST(Gbnf, BoundedAndUnboundedRepeats) {
  const Grammar g = parse_gbnf("root ::= \"a\"{2} \"b\"{1,} \"c\"{0,3}");
  EXPECT_TRUE(accepts(g, "aab"));
  EXPECT_TRUE(accepts(g, "aabbbbccc"));
  EXPECT_FALSE(accepts(g, "aabcccc"));
  EXPECT_FALSE(accepts(g, "ab"));
}

TEST(Gbnf, RecursionThatConsumesIsFine) {
  const Grammar g = parse_gbnf("root ::= \"(\" root \")\" | \"x\"");
  EXPECT_TRUE(accepts(g, "((x))"));
  EXPECT_FALSE(accepts(g, "((x)"));
}

TEST(Gbnf, ErrorsNameTheProblemAndWhere) {
  EXPECT_EQ(error_of([] { parse_gbnf("root ::= \"abc"); }),
            "grammar line 1 column 14: expected '\"' closing the literal, found the end");
  EXPECT_EQ(error_of([] { parse_gbnf("root = \"a\""); }),
            "grammar line 1 column 6: expected '::=' after the rule name 'root', found '= \"a\"'");
  EXPECT_EQ(error_of([] { compile_grammar(parse_gbnf("root ::= thing")); }),
            "the rule 'thing' is not defined (used in 'root')");
  EXPECT_EQ(error_of([] { compile_grammar(parse_gbnf("start ::= \"a\"")); }),
            "the grammar has no rule 'root' to start from");
  EXPECT_EQ(error_of([] { compile_grammar(parse_gbnf("root ::= root \"a\" | \"b\"")); }),
            "the grammar is left-recursive: 'root' -> 'root' (a rule must match a byte before "
            "it refers to itself)");
  EXPECT_NE(error_of([] { parse_gbnf("root ::= [a-"); }), "(no error)");
  EXPECT_NE(error_of([] { parse_gbnf("root ::= \"a\"{3,1}"); }), "(no error)");
  EXPECT_NE(error_of([] { parse_gbnf("root ::= ((\"a\")"); }), "(no error)");
  EXPECT_NE(error_of([] { parse_gbnf("root ::= \"\\q\""); }), "(no error)");
}

TEST(Regex, CommonSubset) {
  const Grammar g = regex_grammar(R"(^(\+\d{1,3} )?\(\d{3}\) [0-9]{3}-\d{4}$)");
  EXPECT_TRUE(accepts(g, "(555) 123-4567"));
  EXPECT_TRUE(accepts(g, "+44 (555) 123-4567"));
  EXPECT_FALSE(accepts(g, "(555) 123-456"));
  const Grammar e = regex_grammar(R"([\w.]+@(?:[a-z]+\.)+(com|org)|n/a)");
  EXPECT_TRUE(accepts(e, "a.b_c@mail.example.org"));
  EXPECT_TRUE(accepts(e, "n/a"));
  EXPECT_FALSE(accepts(e, "a@b.net"));
  const Grammar dot = regex_grammar("a.c[^x]?");
  EXPECT_TRUE(accepts(dot, "aéc"));
  EXPECT_FALSE(accepts(dot, "a\nc"));
  EXPECT_TRUE(accepts(dot, "abcy"));
}

TEST(Regex, UnsupportedConstructsAreNamed) {
  EXPECT_EQ(error_of([] { regex_grammar("(a)\\1"); }),
            "regex offset 4: back-references are not supported");
  EXPECT_EQ(error_of([] { regex_grammar("a(?=b)"); }),
            "regex offset 2: lookaround and inline flags ('(?') are not supported");
  EXPECT_EQ(error_of([] { regex_grammar("a^b"); }),
            "regex offset 1: anchors are supported only at the ends of the pattern");
  EXPECT_EQ(error_of([] { regex_grammar("*a"); }),
            "regex offset 0: a repeat with nothing to repeat");
  EXPECT_NE(error_of([] { regex_grammar("(ab"); }), "(no error)");
  EXPECT_NE(error_of([] { regex_grammar("[ab"); }), "(no error)");
}

using OJson = nlohmann::ordered_json;

TEST(JsonSchema, ObjectsWithRequiredAndOptionalProperties) {
  const Grammar g = json_schema_grammar(OJson::parse(R"({
    "type": "object",
    "properties": {
      "name": {"type": "string", "maxLength": 5},
      "age": {"type": "integer"},
      "tags": {"type": "array", "items": {"enum": ["a", "b"]}, "maxItems": 2},
      "ok": {"type": ["boolean", "null"]}
    },
    "required": ["name", "ok"]
  })"));
  EXPECT_TRUE(accepts(g, R"({"name": "Bob", "ok": true})"));
  EXPECT_TRUE(accepts(g, R"({"name":"Bob","age":-12,"tags":["a", "b"],"ok":null})"));
  EXPECT_FALSE(accepts(g, R"({"name": "Bob"})"));                 // ok is required
  EXPECT_FALSE(accepts(g, R"({"ok": true, "name": "Bob"})"));     // schema order
  EXPECT_FALSE(accepts(g, R"({"name": "Bobbie", "ok": true})"));  // maxLength 5
  EXPECT_FALSE(accepts(g, R"({"name": "B", "tags": ["a","b","a"], "ok": true})"));
  EXPECT_FALSE(accepts(g, R"({"name": "B", "ok": true, "x": 1})"));  // no extra keys
  EXPECT_TRUE(accepts(g, R"({"name": "\"\u00e9\n", "ok": false})"));
  EXPECT_FALSE(accepts(g, "{\"name\": \"a\nb\", \"ok\": false}"));  // raw control character
}

TEST(JsonSchema, NumbersConstAnyOfAndRefs) {
  const Grammar g = json_schema_grammar(OJson::parse(R"({
    "$defs": {"node": {"type": "object", "properties": {
        "v": {"type": "number"}, "next": {"anyOf": [{"$ref": "#/$defs/node"}, {"type": "null"}]}},
      "required": ["v", "next"]}},
    "anyOf": [{"$ref": "#/$defs/node"}, {"const": "none"}]
  })"));
  EXPECT_TRUE(accepts(g, R"({"v": 1.5e-3, "next": {"v": 0, "next": null}})"));
  EXPECT_TRUE(accepts(g, R"("none")"));
  EXPECT_FALSE(accepts(g, R"({"v": 01, "next": null})"));
  EXPECT_FALSE(accepts(g, R"({"v": 1., "next": null})"));
}

TEST(JsonSchema, PatternFormatAndIntegerBounds) {
  const Grammar g = json_schema_grammar(OJson::parse(R"({"type": "object", "properties": {
      "code": {"type": "string", "pattern": "^[A-Z]{2}-\\d+$"},
      "has": {"type": "string", "pattern": "a\"b"},
      "day": {"type": "string", "format": "date"},
      "n": {"type": "integer", "minimum": -3, "exclusiveMaximum": 12},
      "big": {"type": "integer", "minimum": 95}},
    "required": ["code", "has", "day", "n", "big"]})"));
  const std::string ok = R"({"code": "AB-12", "has": "xa\"by", "day": "2026-12-07", )";
  EXPECT_TRUE(accepts(g, ok + R"("n": -3, "big": 95})"));
  EXPECT_TRUE(accepts(g, ok + R"("n": 11, "big": 123456})"));
  EXPECT_FALSE(accepts(g, ok + R"("n": 12, "big": 95})"));  // exclusive maximum
  EXPECT_FALSE(accepts(g, ok + R"("n": -4, "big": 95})"));
  EXPECT_FALSE(accepts(g, ok + R"("n": 0, "big": 94})"));
  EXPECT_FALSE(accepts(g, ok + R"("n": 0, "big": 095})"));
  EXPECT_FALSE(
      accepts(g, R"({"code": "AB-", "has": "ab", "day": "2026-12-07", "n": 0, "big": 99})"));
  EXPECT_FALSE(
      accepts(g, R"({"code": "AB-1", "has": "ab", "day": "2026-13-07", "n": 0, "big": 99})"));
  // The pattern's quote is written escaped; a raw one would end the string.
  EXPECT_FALSE(
      accepts(g, R"({"code": "AB-1", "has": "a"b", "day": "2026-12-07", "n": 0, "big": 99})"));
}

TEST(JsonSchema, JsonObjectIsAnyObject) {
  const Grammar g = json_object_grammar();
  EXPECT_TRUE(accepts(g, R"({"a": [1, {"b": null}], "c": "d"})"));
  EXPECT_TRUE(accepts(g, "{}"));
  EXPECT_FALSE(accepts(g, "[1]"));
  EXPECT_FALSE(accepts(g, R"({"a": 1,})"));
}

TEST(JsonSchema, UnsupportedKeywordsAreNamed) {
  EXPECT_EQ(
      error_of([] {
        json_schema_grammar(OJson::parse(
            R"({"type": "object", "properties": {"n": {"type": "integer", "multipleOf": 3}}})"));
      }),
      "JSON schema at #/properties/n: the keyword 'multipleOf' is not supported");
  EXPECT_EQ(
      error_of([] { json_schema_grammar(OJson::parse(R"({"type": "integer", "maximum": 3})")); }),
      "JSON schema at #: an integer bound is supported with both minimum and maximum (at "
      "most 10000 values apart) or as a minimum in [0, 10000] alone");
  EXPECT_EQ(error_of([] {
              json_schema_grammar(OJson::parse(R"({"type": "string", "format": "color"})"));
            }),
            "JSON schema at #: the format 'color' is not supported (supported: date, date-time, "
            "email, ipv4, time, uuid)");
  EXPECT_EQ(error_of([] { json_schema_grammar(OJson::parse(R"({"type": "strang"})")); }),
            "JSON schema at #: unknown type 'strang'");
  EXPECT_EQ(error_of([] { json_schema_grammar(OJson::parse(R"({"$ref": "#/$defs/x"})")); }),
            "JSON schema at #: $ref '#/$defs/x' points at nothing");
  EXPECT_EQ(
      error_of([] { json_schema_grammar(OJson::parse(R"({"type": "string", "maxLength": -1})")); }),
      "JSON schema at #: 'maxLength' must be an integer in [0, 10000], got -1");
}

// A grammar whose states multiply stops with an Error at the memory cap,
// not by taking the machine's memory.
TEST(GrammarAutomatonLimit, StatesThatMultiplyStopAtTheCap) {
  GrammarAutomaton a(compile_grammar(regex_grammar("(a|b)*a(a|b){20}")));
  std::mt19937 rng(1);
  int32_t s = a.start();
  EXPECT_THROW(
      for (int i = 0; i < 2000000; ++i) {
        const int32_t n = a.next(s, static_cast<uint8_t>(rng() % 2 ? 'a' : 'b'));
        ASSERT_NE(n, GrammarAutomaton::kDead);
        s = n;
      },
      Error);
  EXPECT_GT(a.num_states(), 10000u);
}

// Random bytes and mutated valid inputs: each front end either compiles or
// throws Error; nothing crashes, hangs or throws anything else.
TEST(GrammarFuzz, BadInputsThrowErrorOnly) {
  std::mt19937 rng(45);
  const std::vector<std::string> seeds = {
      R"(root ::= "a" [b-d]* (x | "y"){1,3} x ::= [^"\n] .)",
      R"((\+\d{1,3} )?[a-z.]+@(?:[a-z]+\.)+(com|org)$)",
      R"({"type":"object","properties":{"a":{"type":"array","items":{"$ref":"#"},"maxItems":2}}})"};
  const std::string alphabet = "()[]{}|*+?.^$\\\"':,-0123456789ab#\n \xE4\xBD\xA0\xFF";
  int compiled = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string s = seeds[static_cast<size_t>(i) % seeds.size()];
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits && !s.empty(); ++e) {
      const size_t at = rng() % s.size();
      const char c = alphabet[rng() % alphabet.size()];
      switch (rng() % 3) {
        case 0:
          s[at] = c;
          break;
        case 1:
          s.insert(s.begin() + static_cast<std::ptrdiff_t>(at), c);
          break;
        default:
          s.erase(at, 1 + rng() % 3);
          break;
      }
    }
    try {
      std::shared_ptr<const ByteGrammar> g;
      switch (i % 3) {
        case 0:
          g = compile_grammar(parse_gbnf(s));
          break;
        case 1:
          g = compile_grammar(regex_grammar(s));
          break;
        default: {
          const OJson j = OJson::parse(s, nullptr, false);
          if (j.is_discarded()) continue;
          g = compile_grammar(json_schema_grammar(j));
        }
      }
      ++compiled;
      GrammarAutomaton a(g);  // and the automaton takes any bytes
      int32_t st = a.start();
      for (int k = 0; k < 64; ++k) {
        const int32_t n = a.next(st, static_cast<uint8_t>(rng() % 256));
        if (n != GrammarAutomaton::kDead) st = n;
      }
    } catch (const Error&) {
    }
  }
  EXPECT_GT(compiled, 100);  // the mutations leave some inputs valid
}

}  // namespace
}  // namespace parallm::structured
