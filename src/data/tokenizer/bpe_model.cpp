// BpeModel: symbols are ids, merges a hash map from an id pair to (rank, new
// id). merge_all pops candidate merges lowest rank first, leftmost on ties,
// the order of Hugging Face's priority queue, so the result is the same.
#include "data/tokenizer/bpe_model.h"

#include <fmt/format.h>

#include <functional>
#include <queue>

#include "base/error.h"

namespace parallm {

namespace {

uint64_t pair_key(int32_t a, int32_t b) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
}

size_t char_len(std::string_view s, size_t pos) {
  size_t n = 1;
  while (pos + n < s.size() && (static_cast<unsigned char>(s[pos + n]) & 0xC0) == 0x80) ++n;
  return n;
}

}  // namespace

BpeModel::BpeModel(Vocab vocab, const std::vector<std::pair<std::string, std::string>>& merges,
                   BpeOptions options, std::string_view where)
    : vocab_(std::move(vocab)), options_(std::move(options)) {
  int32_t max_id = -1;
  for (const auto& [tok, id] : vocab_) {
    PX_CHECK(id >= 0, "{}.vocab: token '{}' has negative id {}", where, tok, id);
    max_id = std::max(max_id, id);
  }
  id_to_token_.assign(static_cast<size_t>(max_id + 1), nullptr);
  for (const auto& [tok, id] : vocab_) {
    PX_CHECK(id_to_token_[static_cast<size_t>(id)] == nullptr,
             "{}.vocab: id {} is given to both '{}' and '{}'", where, id,
             *id_to_token_[static_cast<size_t>(id)], tok);
    id_to_token_[static_cast<size_t>(id)] = &tok;
  }
  const std::string& prefix = options_.continuing_subword_prefix;
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const auto& [a, b] = merges[rank];
    auto ia = vocab_.find(a);
    auto ib = vocab_.find(b);
    PX_CHECK(ia != vocab_.end(), "{}.merges[{}] ('{} {}'): token '{}' is not in the vocabulary",
             where, rank, a, b, a);
    PX_CHECK(ib != vocab_.end(), "{}.merges[{}] ('{} {}'): token '{}' is not in the vocabulary",
             where, rank, a, b, b);
    const bool strip = !prefix.empty() && b.starts_with(prefix);
    const std::string merged = a + (strip ? b.substr(prefix.size()) : b);
    auto im = vocab_.find(merged);
    PX_CHECK(im != vocab_.end(),
             "{}.merges[{}] ('{} {}'): the merged token '{}' is not in the vocabulary", where, rank,
             a, b, merged);
    // A repeated pair keeps its last rank, as a map built in order would.
    merges_[pair_key(ia->second, ib->second)] = {static_cast<int32_t>(rank), im->second};
  }
  for (int b = 0; b < 256; ++b) {
    auto it = vocab_.find(fmt::format("<0x{:02X}>", b));
    byte_ids_[static_cast<size_t>(b)] = it == vocab_.end() ? -1 : it->second;
  }
  if (options_.unk_token) {
    auto it = vocab_.find(*options_.unk_token);
    PX_CHECK(it != vocab_.end(), "{}.unk_token: '{}' is not in the vocabulary", where,
             *options_.unk_token);
    unk_id_ = it->second;
  }
}

BpeModel BpeModel::from_json(const Json& model, std::string_view where) {
  const std::string w(where);
  auto type = model.find("type");
  if (type != model.end()) {
    const std::string name = type->is_string() ? type->get<std::string>() : json_brief(*type);
    PX_CHECK(name == "BPE", "{}.type: unsupported model type '{}' (supported: BPE)", w, name);
  }
  PX_CHECK(!model.contains("dropout") || model["dropout"].is_null() ||
               model["dropout"].get<double>() == 0.0,
           "{}.dropout: BPE dropout ({}) is a training feature and is not supported", w,
           json_brief(model["dropout"]));
  const Json& vj = json_field(model, "vocab", w);
  PX_CHECK(vj.is_object(), "{}.vocab: expected an object of token -> id, got {}", w,
           json_brief(vj));
  Vocab vocab;
  vocab.reserve(vj.size());
  for (auto it = vj.begin(); it != vj.end(); ++it) {
    PX_CHECK(it.value().is_number_integer(), "{}.vocab['{}']: expected an integer id, got {}", w,
             it.key(), json_brief(it.value()));
    vocab.emplace(it.key(), it.value().get<int32_t>());
  }
  const Json& mj = json_field(model, "merges", w);
  PX_CHECK(mj.is_array(), "{}.merges: expected an array, got {}", w, json_brief(mj));
  std::vector<std::pair<std::string, std::string>> merges;
  merges.reserve(mj.size());
  for (size_t i = 0; i < mj.size(); ++i) {
    const Json& m = mj[i];
    if (m.is_string()) {
      // "a b": exactly one space, as Hugging Face requires.
      const std::string s = m.get<std::string>();
      const size_t sp = s.find(' ');
      PX_CHECK(sp != std::string::npos && s.find(' ', sp + 1) == std::string::npos,
               "{}.merges[{}]: expected two tokens separated by one space, got '{}'", w, i, s);
      merges.emplace_back(s.substr(0, sp), s.substr(sp + 1));
    } else {
      PX_CHECK(m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string(),
               "{}.merges[{}]: expected \"a b\" or [\"a\", \"b\"], got {}", w, i, json_brief(m));
      merges.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
    }
  }
  BpeOptions o;
  auto opt_string = [&](const char* key) -> std::optional<std::string> {
    auto it = model.find(key);
    if (it == model.end() || it->is_null()) return std::nullopt;
    PX_CHECK(it->is_string(), "{}.{}: expected a string, got {}", w, key, json_brief(*it));
    return it->get<std::string>();
  };
  o.unk_token = opt_string("unk_token");
  o.continuing_subword_prefix = opt_string("continuing_subword_prefix").value_or("");
  o.end_of_word_suffix = opt_string("end_of_word_suffix").value_or("");
  o.fuse_unk = json_bool(model, "fuse_unk", w, false);
  o.byte_fallback = json_bool(model, "byte_fallback", w, false);
  o.ignore_merges = json_bool(model, "ignore_merges", w, false);
  return BpeModel(std::move(vocab), merges, std::move(o), w);
}

void BpeModel::tokenize(std::string_view word, std::vector<int32_t>& out) const {
  if (word.empty()) return;
  if (options_.ignore_merges) {
    if (auto it = vocab_.find(word); it != vocab_.end()) {
      out.push_back(it->second);
      return;
    }
  }
  std::vector<int32_t> symbols;
  symbols.reserve(word.size());
  bool unk_pending = false;  // the last symbol is an unk that a fused unk may extend
  std::string piece;
  for (size_t pos = 0; pos < word.size();) {
    const size_t n = char_len(word, pos);
    std::string_view ch = word.substr(pos, n);
    const bool first = pos == 0;
    pos += n;
    const bool last = pos >= word.size();
    piece.clear();
    if (!first) piece += options_.continuing_subword_prefix;
    piece += ch;
    if (last) piece += options_.end_of_word_suffix;
    if (auto it = vocab_.find(piece); it != vocab_.end()) {
      symbols.push_back(it->second);
      unk_pending = false;
      continue;
    }
    if (options_.byte_fallback) {
      bool all = true;
      for (unsigned char b : piece) all = all && byte_ids_[b] >= 0;
      if (all) {
        for (unsigned char b : piece) symbols.push_back(byte_ids_[b]);
        unk_pending = false;
        continue;
      }
    }
    if (unk_id_) {
      if (!(options_.fuse_unk && unk_pending)) symbols.push_back(*unk_id_);
      unk_pending = true;
    }
    // No unk token: the character is dropped, as Hugging Face drops it.
  }
  merge_all(symbols);
  out.insert(out.end(), symbols.begin(), symbols.end());
}

void BpeModel::merge_all(std::vector<int32_t>& symbols) const {
  // A doubly linked list of symbols and a min-heap of candidate merges keyed
  // by (rank, position): O(n log n), which matters when a pre-token is a whole
  // document (SentencePiece files without a pre-tokenizer).
  struct Candidate {
    int32_t rank;
    int32_t pos;
    int32_t new_id;
    bool operator>(const Candidate& o) const {
      return rank != o.rank ? rank > o.rank : pos > o.pos;
    }
  };
  const auto n = static_cast<int32_t>(symbols.size());
  if (n < 2) return;
  std::vector<int32_t> prev(static_cast<size_t>(n));
  std::vector<int32_t> next(static_cast<size_t>(n));
  std::vector<bool> alive(static_cast<size_t>(n), true);
  for (int32_t i = 0; i < n; ++i) {
    prev[static_cast<size_t>(i)] = i - 1;
    next[static_cast<size_t>(i)] = i + 1 < n ? i + 1 : -1;
  }
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> heap;
  auto consider = [&](int32_t left) {
    const int32_t right = next[static_cast<size_t>(left)];
    if (right < 0) return;
    auto it = merges_.find(
        pair_key(symbols[static_cast<size_t>(left)], symbols[static_cast<size_t>(right)]));
    if (it != merges_.end()) heap.push({it->second.first, left, it->second.second});
  };
  for (int32_t i = 0; i + 1 < n; ++i) consider(i);
  while (!heap.empty()) {
    const Candidate c = heap.top();
    heap.pop();
    const auto pos = static_cast<size_t>(c.pos);
    if (!alive[pos] || next[pos] < 0) continue;
    const auto right = static_cast<size_t>(next[pos]);
    // A stale entry: the pair here changed since it was queued. Like Hugging
    // Face, compare only the id the merge would produce.
    auto it = merges_.find(pair_key(symbols[pos], symbols[right]));
    if (it == merges_.end() || it->second.second != c.new_id) continue;
    symbols[pos] = c.new_id;
    alive[right] = false;
    next[pos] = next[right];
    if (next[pos] >= 0) prev[static_cast<size_t>(next[pos])] = c.pos;
    if (prev[pos] >= 0) consider(prev[pos]);
    consider(c.pos);
  }
  size_t w = 0;
  for (size_t i = 0; i < symbols.size(); ++i) {
    if (alive[i]) symbols[w++] = symbols[i];
  }
  symbols.resize(w);
}

std::optional<int32_t> BpeModel::token_to_id(std::string_view token) const {
  auto it = vocab_.find(token);
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

const std::string* BpeModel::id_to_token(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= id_to_token_.size()) return nullptr;
  return id_to_token_[static_cast<size_t>(id)];
}

}  // namespace parallm
