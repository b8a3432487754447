// GrammarAutomaton (see grammar_automaton.h).
#include "infer/structured/grammar_automaton.h"

#include <algorithm>

#include "base/error.h"

namespace parallm::structured {

size_t GrammarAutomaton::VecHash::operator()(const std::vector<uint32_t>& v) const {
  uint64_t h = 1469598103934665603ull;
  for (uint32_t x : v) h = (h ^ x) * 1099511628211ull;
  return static_cast<size_t>(h);
}

GrammarAutomaton::GrammarAutomaton(std::shared_ptr<const ByteGrammar> g) : g_(std::move(g)) {
  PX_CHECK(g_ != nullptr, "a grammar automaton needs a grammar");
  nodes_.push_back({0, 0});  // 0: the empty stack
  scratch_.clear();
  visited_.clear();
  const uint32_t root = g_->root();
  for (const uint32_t* a = g_->alts_begin(root); a != g_->alts_end(root); ++a) close(*a, 0);
  std::vector<uint32_t> first = scratch_;
  PX_CHECK(intern(first) == 0, "the start state must be state 0");
}

uint32_t GrammarAutomaton::node(uint32_t pos, uint32_t parent) {
  const uint64_t key = (static_cast<uint64_t>(pos) << 32) | parent;
  auto [it, fresh] = node_ids_.emplace(key, static_cast<uint32_t>(nodes_.size()));
  if (fresh) {
    nodes_.push_back({pos, parent});
    charge(32);
  }
  return it->second;
}

void GrammarAutomaton::close(uint32_t pos, uint32_t parent) {
  // Seen already in this step: a nullable loop, or two paths to one place.
  const uint64_t key = (static_cast<uint64_t>(pos) << 32) | parent;
  if (std::find(visited_.begin(), visited_.end(), key) != visited_.end()) return;
  visited_.push_back(key);
  const ByteElem& e = g_->elem(pos);
  switch (e.kind) {
    case ByteElem::Kind::Bytes:
      scratch_.push_back(node(pos, parent));
      return;
    case ByteElem::Kind::End:
      if (parent == 0) {
        scratch_.push_back(0);
      } else {
        const Node p = nodes_[parent];
        close(p.pos, p.parent);
      }
      return;
    case ByteElem::Kind::Ref: {
      const uint32_t cont =
          g_->elem(pos + 1).kind == ByteElem::Kind::End ? parent : node(pos + 1, parent);
      for (const uint32_t* a = g_->alts_begin(e.arg); a != g_->alts_end(e.arg); ++a)
        close(*a, cont);
      return;
    }
  }
}

int32_t GrammarAutomaton::intern(std::vector<uint32_t>& nodes) {
  std::sort(nodes.begin(), nodes.end());
  nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
  if (nodes.empty()) return kDead;
  auto it = state_ids_.find(nodes);
  if (it != state_ids_.end()) return it->second;
  charge(nodes.size() * 2 * sizeof(uint32_t) + sizeof(State) + 64);
  const int32_t id = static_cast<int32_t>(states_.size());
  State s;
  s.nodes = nodes;
  s.can_end = nodes.front() == 0;
  s.any_byte = nodes.back() != 0;
  states_.push_back(std::move(s));
  state_ids_.emplace(std::move(nodes), id);
  return id;
}

void GrammarAutomaton::charge(size_t bytes) {
  bytes_ += bytes;
  PX_CHECK(bytes_ <= kMaxAutomatonBytes,
           "the grammar's automaton outgrew {} MiB ({} states): a grammar whose states multiply "
           "(as the regex (a|b)*a(a|b){{20}} does) is not supported",
           kMaxAutomatonBytes >> 20, states_.size());
}

int32_t* GrammarAutomaton::table(int32_t state) {
  State& s = states_[static_cast<size_t>(state)];
  if (!s.next) {
    charge(256 * sizeof(int32_t));
    s.next = std::make_unique<int32_t[]>(256);
    std::fill(s.next.get(), s.next.get() + 256, kUnknown);
  }
  return s.next.get();
}

int32_t GrammarAutomaton::compute(int32_t state, uint8_t byte) {
  const std::vector<uint32_t>& nodes = states_[static_cast<size_t>(state)].nodes;
  const bool patterned = nodes.size() <= 64;
  uint64_t pattern = 0;
  if (patterned) {
    for (size_t i = 0; i < nodes.size(); ++i)
      if (nodes[i] != 0 && byte_set_has(g_->set(g_->elem(nodes_[nodes[i]].pos).arg), byte))
        pattern |= uint64_t{1} << i;
    if (pattern == 0) return kDead;
    for (const auto& [p, to] : states_[static_cast<size_t>(state)].by_pattern)
      if (p == pattern) return to;
  }
  scratch_.clear();
  visited_.clear();
  // states_ may grow below: copy the node list first.
  const std::vector<uint32_t> from = nodes;
  for (uint32_t id : from) {
    if (id == 0) continue;
    const Node n = nodes_[id];
    if (byte_set_has(g_->set(g_->elem(n.pos).arg), byte)) close(n.pos + 1, n.parent);
  }
  const int32_t to = intern(scratch_);
  if (patterned) states_[static_cast<size_t>(state)].by_pattern.emplace_back(pattern, to);
  return to;
}

int32_t GrammarAutomaton::next(int32_t state, std::string_view bytes) {
  for (char c : bytes) {
    if (state == kDead) return kDead;
    state = next(state, static_cast<uint8_t>(c));
  }
  return state;
}

}  // namespace parallm::structured
