// Structured output's per-step cost (issue 45): the token mask of a
// ~50k-token vocabulary (bench/structured_bench_vocab.py) at each step of
// constrained generations, against the step's forward, which
// bench/structured_bench.sh measures with infer_bench on GPT-2 124M.
// Generations are random walks: each step masks the vocabulary as the
// engine does (ConstrainedSequence: the trie walk, or a kept list when the
// state repeats, + the -inf row) and takes a random allowed token, so
// strings, numbers and punctuation come in GPT-2-like pieces. Per grammar: mean, p50, p99 and
// max of the mask time per step, the mean allowed count, and the same
// masks by brute force (every token run through the automaton) once, as a
// check and for scale. Prints one JSON line per grammar.
// Usage: structured_mask_bench --tokenizer DIR [--steps N] [--runs R]
#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <random>
#include <string>
#include <vector>

#include "data/tokenizer/tokenizer.h"
#include "infer/structured/byte_grammar.h"
#include "infer/structured/constrained_sequence.h"
#include "infer/structured/gbnf_parser.h"
#include "infer/structured/json_schema_grammar.h"
#include "infer/structured/regex_grammar.h"
#include "infer/structured/token_mask.h"

using namespace parallm;
using namespace parallm::structured;
using Clock = std::chrono::steady_clock;

namespace {

double us_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
}

struct Case {
  std::string name;
  Grammar grammar;
};

std::vector<Case> cases() {
  std::vector<Case> out;
  out.push_back({"json_schema", json_schema_grammar(nlohmann::ordered_json::parse(R"({
    "type": "object",
    "properties": {
      "name": {"type": "string", "maxLength": 40},
      "age": {"type": "integer"},
      "email": {"type": "string", "maxLength": 60},
      "tags": {"type": "array", "items": {"type": "string", "maxLength": 16}, "maxItems": 6},
      "role": {"enum": ["admin", "user", "guest"]},
      "address": {"type": "object", "properties": {
        "street": {"type": "string", "maxLength": 40}, "zip": {"type": "string", "maxLength": 10},
        "geo": {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2}},
        "required": ["street", "zip", "geo"]},
      "active": {"type": "boolean"}},
    "required": ["name", "age", "email", "tags", "role", "address", "active"]})"))});
  out.push_back({"json_object", json_object_grammar()});
  out.push_back(
      {"regex",
       regex_grammar(R"([A-Z][a-z]{2,12}( [A-Z][a-z]{2,12}){0,3}, \d{1,5} [A-Za-z ]{3,30}\.)")});
  out.push_back({"gbnf", parse_gbnf(R"(
    root ::= "SELECT " cols " FROM " name (" WHERE " cond (" AND " cond)*)? ";"
    cols ::= "*" | name (", " name)*
    name ::= [a-z_] [a-z0-9_]{0,15}
    cond ::= name (" = " | " < " | " > ") (num | "'" [^'\n]{0,20} "'")
    num ::= [0-9]{1,6}
  )")});
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir;
  int steps = 200, runs = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--tokenizer")
      dir = v;
    else if (a == "--steps")
      steps = std::stoi(v);
    else if (a == "--runs")
      runs = std::stoi(v);
  }
  if (dir.empty()) {
    fmt::print(stderr, "usage: structured_mask_bench --tokenizer DIR [--steps N] [--runs R]\n");
    return 2;
  }
  const std::unique_ptr<Tokenizer> tok = load_tokenizer(dir);
  const auto t0 = Clock::now();
  const auto vocab = TokenVocabulary::from_tokenizer(*tok, tok->vocab_size(), tok->eos_ids());
  fmt::print("{{\"vocab\": {}, \"trie_nodes\": {}, \"vocab_build_ms\": {:.1f}}}\n", vocab->size(),
             vocab->trie().num_nodes(), us_since(t0) / 1000);
  std::vector<float> logits(static_cast<size_t>(vocab->size()), 0.0f), masked;
  for (const Case& c : cases()) {
    const auto g = compile_grammar(c.grammar);
    std::vector<double> times;
    double allowed_sum = 0, brute_us = 0;
    int brute_n = 0, mismatches = 0, tokens = 0;
    std::mt19937 rng(45);
    std::vector<int32_t> allowed, brute;
    for (int run = 0; run < runs; ++run) {
      ConstrainedSequence seq(g, vocab);  // each generation starts cold, as a request does
      GrammarAutomaton a(g);              // the same walk, for the brute-force check
      int32_t s = a.start();
      for (int step = 0; step < steps; ++step) {
        const auto m0 = Clock::now();
        seq.mask(logits, masked);
        times.push_back(us_since(m0));
        allowed = seq.allowed();
        allowed_sum += static_cast<double>(allowed.size());
        if (run == 0 && step % 10 == 0) {  // brute force, warm states
          const auto b0 = Clock::now();
          brute.clear();
          for (int32_t id = 0; id < vocab->size(); ++id)
            if (!vocab->bytes(id).empty() && a.next(s, vocab->bytes(id)) != GrammarAutomaton::kDead)
              brute.push_back(id);
          if (a.can_end(s))
            for (int32_t e : vocab->eos_ids()) brute.push_back(e);
          brute_us += us_since(b0);
          ++brute_n;
          std::vector<int32_t> sorted = allowed;
          std::sort(sorted.begin(), sorted.end());
          std::sort(brute.begin(), brute.end());
          mismatches += sorted != brute;
        }
        std::vector<int32_t> choices;
        for (int32_t id : allowed)
          if (!vocab->bytes(id).empty()) choices.push_back(id);
        if (choices.empty()) break;
        const int32_t pick = choices[rng() % choices.size()];
        s = a.next(s, vocab->bytes(pick));
        seq.advance(pick);
        ++tokens;
      }
    }
    std::vector<double> sorted = times;
    std::sort(sorted.begin(), sorted.end());
    double mean = 0;
    for (double t : times) mean += t;
    mean /= static_cast<double>(times.size());
    fmt::print(
        "{{\"grammar\": \"{}\", \"steps\": {}, \"tokens\": {}, \"mask_us_mean\": {:.1f}, "
        "\"mask_us_p50\": {:.1f}, \"mask_us_p99\": {:.1f}, \"mask_us_max\": {:.1f}, "
        "\"allowed_mean\": {:.0f}, \"brute_force_us_mean\": {:.1f}, \"mismatches\": {}}}\n",
        c.name, times.size(), tokens, mean, sorted[sorted.size() / 2],
        sorted[std::min(sorted.size() - 1, sorted.size() * 99 / 100)], sorted.back(),
        allowed_sum / static_cast<double>(times.size()), brute_n ? brute_us / brute_n : 0.0,
        mismatches);
  }
  return 0;
}
