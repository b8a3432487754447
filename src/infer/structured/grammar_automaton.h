// GrammarAutomaton: the pushdown matcher of a ByteGrammar, built lazily into
// a DFA. A matcher state is the set of stacks the grammar may be in, each
// stack a chain of interned nodes (element position, parent node) whose top
// is a byte set; advancing by a byte keeps the stacks whose top takes it,
// moves past it and expands rule references until every top is a byte set
// again (node 0, the empty stack, means the grammar may end here). Each set
// of stacks is interned as a state id and each (state, byte) step is
// remembered, so a mask walk over the vocabulary costs a table lookup per
// trie edge once the states it meets have been seen, and a new state's
// bytes cost one expansion per pattern of the stacks that take them.
// Invariant: a tail reference (the last element of an alternative) pushes
// no node, so x* and x{0,n} run in constant stack depth and a finite
// grammar without nesting recursion has finitely many states.
#pragma once
#include <cstdint>
#include <memory>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "infer/structured/byte_grammar.h"

namespace parallm::structured {

// The memory one automaton may hold (states, their tables, nodes): a
// grammar whose states multiply (a regex like (a|b)*a(a|b){20}) stops with
// an Error instead of taking the server's memory.
inline constexpr size_t kMaxAutomatonBytes = size_t{64} << 20;

class GrammarAutomaton {
 public:
  static constexpr int32_t kDead = -1;  // no stack takes the byte

  explicit GrammarAutomaton(std::shared_ptr<const ByteGrammar> g);
  int32_t start() const { return 0; }
  // The state after `byte`, or kDead.
  int32_t next(int32_t state, uint8_t byte) {
    int32_t* t = table(state);
    const int32_t v = t[byte];
    return v != kUnknown ? v : (t[byte] = compute(state, byte));
  }
  // The state after all of `bytes`, or kDead.
  int32_t next(int32_t state, std::string_view bytes);
  bool can_end(int32_t state) const { return states_[static_cast<size_t>(state)].can_end; }
  // Whether any byte is accepted (else the text is complete).
  bool can_continue(int32_t state) const { return states_[static_cast<size_t>(state)].any_byte; }
  size_t num_states() const { return states_.size(); }
  const ByteGrammar& grammar() const { return *g_; }

 private:
  static constexpr int32_t kUnknown = -2;
  struct Node {
    uint32_t pos, parent;
  };
  struct State {
    std::vector<uint32_t> nodes;  // sorted node ids; 0: the grammar may end
    bool can_end = false, any_byte = false;
    std::unique_ptr<int32_t[]> next;  // 256 entries once asked
    // Bytes that every node's set treats alike lead to one state: the
    // result per membership pattern (bit i: node i takes the byte), so a
    // class of 90 bytes costs one expansion, not 90.
    std::vector<std::pair<uint64_t, int32_t>> by_pattern;
  };
  struct VecHash {
    size_t operator()(const std::vector<uint32_t>& v) const;
  };

  int32_t* table(int32_t state);
  int32_t compute(int32_t state, uint8_t byte);
  uint32_t node(uint32_t pos, uint32_t parent);
  // Adds to scratch_ the tops reached from (pos, parent) by expanding.
  void close(uint32_t pos, uint32_t parent);
  int32_t intern(std::vector<uint32_t>& nodes);

  std::shared_ptr<const ByteGrammar> g_;
  std::vector<Node> nodes_;
  std::unordered_map<uint64_t, uint32_t> node_ids_;
  std::vector<State> states_;
  std::unordered_map<std::vector<uint32_t>, int32_t, VecHash> state_ids_;
  std::vector<uint32_t> scratch_;
  std::vector<uint64_t> visited_;  // (pos, parent) expanded in this step; few
  size_t bytes_ = 0;               // held, against kMaxAutomatonBytes
  void charge(size_t bytes);
};

}  // namespace parallm::structured
