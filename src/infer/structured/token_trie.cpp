// TokenTrie (see token_trie.h): built from the token strings in sorted
// order, where each string shares with the one before it exactly the path
// of their common prefix, so the nodes come out in depth-first order.
#include "infer/structured/token_trie.h"

#include <algorithm>
#include <numeric>

namespace parallm::structured {

TokenTrie::TokenTrie(const std::vector<std::string>& bytes) {
  std::vector<int32_t> order;
  for (size_t id = 0; id < bytes.size(); ++id)
    if (!bytes[id].empty()) order.push_back(static_cast<int32_t>(id));
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return bytes[static_cast<size_t>(a)] < bytes[static_cast<size_t>(b)];
  });
  std::vector<uint32_t> path;   // node index per depth - 1 of the current string
  std::vector<uint32_t> count;  // tokens per node
  const std::string* prev = nullptr;
  for (int32_t id : order) {
    const std::string& s = bytes[static_cast<size_t>(id)];
    size_t common = 0;
    if (prev)
      while (common < s.size() && common < prev->size() && s[common] == (*prev)[common]) ++common;
    for (size_t d = path.size(); d > common; --d)
      end_[path[d - 1]] = static_cast<uint32_t>(byte_.size());
    path.resize(common);
    for (size_t d = common; d < s.size(); ++d) {
      path.push_back(static_cast<uint32_t>(byte_.size()));
      byte_.push_back(static_cast<uint8_t>(s[d]));
      depth_.push_back(static_cast<uint32_t>(d + 1));
      end_.push_back(0);
      count.push_back(0);
    }
    ++count[path.back()];
    ids_.push_back(id);  // sorted order: a node's tokens are consecutive
    max_depth_ = std::max<uint32_t>(max_depth_, static_cast<uint32_t>(s.size()));
    prev = &s;
  }
  for (uint32_t n : path) end_[n] = static_cast<uint32_t>(byte_.size());
  tok_.assign(byte_.size() + 1, 0);
  std::partial_sum(count.begin(), count.end(), tok_.begin() + 1);
}

}  // namespace parallm::structured
