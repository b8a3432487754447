// compile_grammar (see byte_grammar.h): rules are built as lists of
// alternatives of elements, helper rules are appended as expressions need
// them, then everything is laid out flat and checked for left recursion.
#include "infer/structured/byte_grammar.h"

#include <functional>
#include <map>
#include <unordered_map>

#include "base/error.h"
#include "infer/structured/utf8_ranges.h"

namespace parallm::structured {

class ByteGrammarBuilder {
 public:
  explicit ByteGrammarBuilder(const Grammar& g) : g_(g) {}

  std::shared_ptr<const ByteGrammar> build() {
    for (const auto& [name, body] : g_.rules) {
      ids_.emplace(name, static_cast<uint32_t>(rules_.size()));
      rules_.push_back({});
      names_.push_back(name);
    }
    auto root = ids_.find(g_.root);
    PX_CHECK(root != ids_.end(), "the grammar has no rule '{}' to start from", g_.root);
    for (size_t r = 0; r < g_.rules.size(); ++r) {
      current_ = g_.rules[r].first;
      rules_[r] = alternatives(g_.rules[r].second);
    }
    auto out = std::make_shared<ByteGrammar>();
    out->sets_ = std::move(sets_);
    out->names_ = std::move(names_);
    out->root_ = root->second;
    for (const auto& alts : rules_) {
      out->rule_first_.push_back(static_cast<uint32_t>(out->alt_starts_.size()));
      for (const auto& seq : alts) {
        out->alt_starts_.push_back(static_cast<uint32_t>(out->elems_.size()));
        out->elems_.insert(out->elems_.end(), seq.begin(), seq.end());
        out->elems_.push_back({ByteElem::Kind::End, 0});
      }
    }
    out->rule_first_.push_back(static_cast<uint32_t>(out->alt_starts_.size()));
    PX_CHECK(out->elems_.size() <= kMaxGrammarElems,
             "the grammar compiles to {} elements, more than the limit of {}", out->elems_.size(),
             kMaxGrammarElems);
    check_left_recursion(*out);
    return out;
  }

 private:
  using Seq = std::vector<ByteElem>;
  using Alts = std::vector<Seq>;

  // The rule body's own alternatives (a top-level | needs no helper rule).
  Alts alternatives(const GrammarExpr& e) {
    Alts alts;
    if (e.kind == GrammarExpr::Kind::Alt) {
      for (const GrammarExpr& item : e.items) alts.push_back(sequence(item));
    } else {
      alts.push_back(sequence(e));
    }
    return alts;
  }

  Seq sequence(const GrammarExpr& e) {
    Seq s;
    emit(e, s);
    return s;
  }

  uint32_t add_rule(Alts alts, const std::string& tag) {
    const uint32_t id = static_cast<uint32_t>(rules_.size());
    rules_.push_back(std::move(alts));
    names_.push_back(current_ + "-" + tag + std::to_string(id));
    grow(1);
    return id;
  }

  uint32_t set_index(const ByteSet& s) {
    auto [it, fresh] = set_ids_.emplace(s, static_cast<uint32_t>(sets_.size()));
    if (fresh) sets_.push_back(s);
    return it->second;
  }

  ByteElem bytes_elem(uint8_t lo, uint8_t hi) {
    ByteSet s{};
    for (unsigned b = lo; b <= hi; ++b) s[b >> 6] |= uint64_t{1} << (b & 63);
    return {ByteElem::Kind::Bytes, set_index(s)};
  }

  void grow(size_t n) {
    size_ += n;
    PX_CHECK(size_ <= kMaxGrammarElems,
             "the grammar compiles to more than {} elements (a repeat count too large?)",
             kMaxGrammarElems);
  }

  void emit(const GrammarExpr& e, Seq& out) {
    using K = GrammarExpr::Kind;
    switch (e.kind) {
      case K::Empty:
        return;
      case K::Literal:
        for (unsigned char c : e.text) out.push_back(bytes_elem(c, c));
        grow(e.text.size());
        return;
      case K::Class:
        out.push_back(class_elem(e));
        grow(1);
        return;
      case K::Seq:
        for (const GrammarExpr& item : e.items) emit(item, out);
        return;
      case K::Alt:
        out.push_back({ByteElem::Kind::Ref, add_rule(alternatives(e), "alt")});
        grow(1);
        return;
      case K::Ref: {
        auto it = ids_.find(e.text);
        PX_CHECK(it != ids_.end(), "the rule '{}' is not defined (used in '{}')", e.text, current_);
        out.push_back({ByteElem::Kind::Ref, it->second});
        grow(1);
        return;
      }
      case K::Repeat:
        emit_repeat(e, out);
        return;
    }
  }

  ByteElem class_elem(const GrammarExpr& e) {
    const std::vector<CodeRange> norm = normalize_class(e.ranges, e.negated);
    PX_CHECK(!norm.empty(), "the character class in '{}' matches no character", current_);
    if (norm.back().hi < 0x80) {
      ByteSet s{};
      for (CodeRange c : norm)
        for (uint32_t b = c.lo; b <= c.hi; ++b) s[b >> 6] |= uint64_t{1} << (b & 63);
      return {ByteElem::Kind::Bytes, set_index(s)};
    }
    std::vector<uint32_t> key;
    for (CodeRange c : norm) key.insert(key.end(), {c.lo, c.hi});
    if (auto it = class_rules_.find(key); it != class_rules_.end())
      return {ByteElem::Kind::Ref, it->second};
    Alts alts;
    for (const ByteSequence& seq : utf8_sequences(norm)) {
      Seq s;
      for (ByteRange r : seq) s.push_back(bytes_elem(r.lo, r.hi));
      alts.push_back(std::move(s));
    }
    grow(alts.size() * 3);
    const uint32_t id = add_rule(std::move(alts), "char");
    class_rules_.emplace(std::move(key), id);
    return {ByteElem::Kind::Ref, id};
  }

  // x{m,n}: m copies of x, then x* or a chain of n - m optional copies.
  void emit_repeat(const GrammarExpr& e, Seq& out) {
    const Seq unit = sequence(e.items.front());
    const int m = e.min_repeat, n = e.max_repeat;
    if (unit.empty()) return;
    grow(unit.size() * static_cast<size_t>(m));
    for (int i = 0; i < m; ++i) out.insert(out.end(), unit.begin(), unit.end());
    if (n == m) return;
    std::vector<uint32_t> key;
    for (const ByteElem& x : unit) key.push_back((static_cast<uint32_t>(x.kind) << 28) ^ x.arg);
    if (n == kUnbounded) {
      key.push_back(0xFFFFFFFFu);
      auto it = repeat_rules_.find(key);
      uint32_t id;
      if (it != repeat_rules_.end()) {
        id = it->second;
      } else {
        id = add_rule({}, "star");
        Seq again = unit;
        again.push_back({ByteElem::Kind::Ref, id});
        rules_[id] = {std::move(again), {}};
        grow(unit.size() + 1);
        repeat_rules_.emplace(key, id);
      }
      out.push_back({ByteElem::Kind::Ref, id});
      return;
    }
    // opt_j ::= x opt_{j-1} | ; opt_0 is nothing. Shared by every x{.., n}.
    uint32_t prev = 0;
    bool have_prev = false;
    key.push_back(0);
    for (int j = 1; j <= n - m; ++j) {
      key.back() = static_cast<uint32_t>(j);
      auto it = repeat_rules_.find(key);
      uint32_t id;
      if (it != repeat_rules_.end()) {
        id = it->second;
      } else {
        Seq s = unit;
        if (have_prev) s.push_back({ByteElem::Kind::Ref, prev});
        grow(s.size());
        id = add_rule({std::move(s), {}}, "opt");
        repeat_rules_.emplace(key, id);
      }
      prev = id;
      have_prev = true;
    }
    out.push_back({ByteElem::Kind::Ref, prev});
  }

  // A rule that reaches itself through leftmost references, each before
  // it only rules that can match nothing, would expand forever.
  static void check_left_recursion(const ByteGrammar& g) {
    const size_t n = g.num_rules();
    std::vector<char> nullable(n, 0);
    for (bool changed = true; changed;) {
      changed = false;
      for (uint32_t r = 0; r < n; ++r) {
        if (nullable[r]) continue;
        for (const uint32_t* a = g.alts_begin(r); a != g.alts_end(r); ++a) {
          uint32_t p = *a;
          while (g.elem(p).kind == ByteElem::Kind::Ref && nullable[g.elem(p).arg]) ++p;
          if (g.elem(p).kind == ByteElem::Kind::End) {
            nullable[r] = changed = true;
            break;
          }
        }
      }
    }
    std::vector<std::vector<uint32_t>> left(n);
    for (uint32_t r = 0; r < n; ++r)
      for (const uint32_t* a = g.alts_begin(r); a != g.alts_end(r); ++a)
        for (uint32_t p = *a; g.elem(p).kind == ByteElem::Kind::Ref; ++p) {
          left[r].push_back(g.elem(p).arg);
          if (!nullable[g.elem(p).arg]) break;
        }
    std::vector<char> mark(n, 0);  // 0 new, 1 on the path, 2 done
    std::vector<uint32_t> path;
    std::function<void(uint32_t)> visit = [&](uint32_t r) {
      mark[r] = 1;
      path.push_back(r);
      for (uint32_t s : left[r]) {
        if (mark[s] == 1) {
          std::string cycle;
          bool on = false;
          for (uint32_t q : path) {
            on = on || q == s;
            if (on) cycle += "'" + g.rule_name(q) + "' -> ";
          }
          PX_FAIL(
              "the grammar is left-recursive: {}'{}' (a rule must match a byte before "
              "it refers to itself)",
              cycle, g.rule_name(s));
        }
        if (mark[s] == 0) visit(s);
      }
      path.pop_back();
      mark[r] = 2;
    };
    for (uint32_t r = 0; r < n; ++r)
      if (mark[r] == 0) visit(r);
  }

  const Grammar& g_;
  std::unordered_map<std::string, uint32_t> ids_;
  std::vector<Alts> rules_;
  std::vector<std::string> names_;
  std::vector<ByteSet> sets_;
  std::map<ByteSet, uint32_t> set_ids_;
  std::map<std::vector<uint32_t>, uint32_t> class_rules_, repeat_rules_;
  std::string current_;
  size_t size_ = 0;
};

std::shared_ptr<const ByteGrammar> compile_grammar(const Grammar& g) {
  return ByteGrammarBuilder(g).build();
}

}  // namespace parallm::structured
