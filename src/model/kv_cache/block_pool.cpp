// BlockPool: reference counts, the blank stack, the eviction list (an
// intrusive doubly linked list through Meta::prev/next, so retaining a free
// cached block is O(1)) and the hash index of cached blocks (see block_pool.h).
#include "model/kv_cache/block_pool.h"

#include <algorithm>

#include "base/error.h"
#include "base/rng.h"

namespace parallm {

uint64_t BlockPool::hash_block(uint64_t parent, std::span<const int32_t> tokens) {
  // Each step is a bijection of the state, so blocks of equal length under
  // the same parent never collide; each token is mixed on its own first so
  // two differing tokens cannot cancel through the xor.
  uint64_t h = mix64(parent ^ 0x2545F4914F6CDD1Dull);
  for (int32_t t : tokens) h = mix64(h ^ mix64(static_cast<uint64_t>(static_cast<uint32_t>(t))));
  return mix64(h ^ tokens.size());
}

BlockPool::BlockPool(int64_t num_blocks, int64_t block_size)
    : block_size_(block_size), meta_(static_cast<size_t>(std::max<int64_t>(num_blocks, 0))) {
  PX_CHECK(num_blocks >= 1 && num_blocks <= INT32_MAX,
           "the KV block pool needs between 1 and {} blocks, got {}", INT32_MAX, num_blocks);
  PX_CHECK(block_size >= 1, "the KV block size must be at least 1, got {}", block_size);
  for (int64_t b = num_blocks - 1; b >= 0; --b) blank_.push_back(static_cast<BlockId>(b));
}

const BlockPool::Meta& BlockPool::meta(BlockId b) const {
  PX_CHECK(b >= 0 && b < total(), "KV block {} is outside the pool [0, {})", b, total());
  return meta_[static_cast<size_t>(b)];
}

void BlockPool::lru_push_back(BlockId b) {
  Meta& m = meta(b);
  m.prev = lru_tail_;
  m.next = -1;
  if (lru_tail_ >= 0)
    meta(lru_tail_).next = b;
  else
    lru_head_ = b;
  lru_tail_ = b;
  ++lru_size_;
}

void BlockPool::lru_remove(BlockId b) {
  Meta& m = meta(b);
  if (m.prev >= 0)
    meta(m.prev).next = m.next;
  else
    lru_head_ = m.next;
  if (m.next >= 0)
    meta(m.next).prev = m.prev;
  else
    lru_tail_ = m.prev;
  m.prev = m.next = -1;
  --lru_size_;
}

BlockId BlockPool::allocate() {
  BlockId b;
  if (!blank_.empty()) {
    b = blank_.back();
    blank_.pop_back();
  } else {
    PX_CHECK(lru_head_ >= 0, "no free KV block: all {} blocks are in use", total());
    b = lru_head_;
    lru_remove(b);
    Meta& m = meta(b);
    by_hash_.erase(m.hash);
    m.cached = false;
    m.tokens.clear();
    ++evictions_;
  }
  meta(b).ref = 1;
  return b;
}

void BlockPool::retain(BlockId b) {
  Meta& m = meta(b);
  PX_CHECK(m.ref > 0 || m.cached, "retaining KV block {}, which is blank", b);
  if (m.ref == 0) lru_remove(b);
  ++m.ref;
}

void BlockPool::release(BlockId b) {
  Meta& m = meta(b);
  PX_CHECK(m.ref > 0, "releasing KV block {}, which nobody holds", b);
  if (--m.ref > 0) return;
  if (m.cached)
    lru_push_back(b);
  else
    blank_.push_back(b);
}

bool BlockPool::holds(const Meta& m, uint64_t parent, std::span<const int32_t> tokens) const {
  return m.cached && m.parent == parent && std::ranges::equal(m.tokens, tokens);
}

uint64_t BlockPool::register_block(BlockId b, uint64_t parent, std::span<const int32_t> tokens) {
  PX_CHECK(static_cast<int64_t>(tokens.size()) == block_size_,
           "registering KV block {} with {} tokens; a full block holds {}", b, tokens.size(),
           block_size_);
  Meta& m = meta(b);
  PX_CHECK(m.ref > 0, "registering KV block {}, which nobody holds", b);
  const uint64_t h = hash_block(parent, tokens);
  if (m.cached) {
    PX_CHECK(m.hash == h && holds(m, parent, tokens),
             "KV block {} is already cached with other tokens", b);
    return h;
  }
  if (by_hash_.contains(h)) return h;  // an equal block (or, rarely, a collision) is cached
  m.cached = true;
  m.hash = h;
  m.parent = parent;
  m.tokens.assign(tokens.begin(), tokens.end());
  by_hash_.emplace(h, b);
  return h;
}

PrefixHit BlockPool::lookup(std::span<const int32_t> tokens, int64_t max_blocks,
                            uint64_t root) const {
  PrefixHit hit;
  const int64_t n =
      std::min<int64_t>(max_blocks, static_cast<int64_t>(tokens.size()) / block_size_);
  uint64_t parent = root;
  for (int64_t i = 0; i < n; ++i) {
    const std::span<const int32_t> blk =
        tokens.subspan(static_cast<size_t>(i * block_size_), static_cast<size_t>(block_size_));
    const uint64_t h = hash_block(parent, blk);
    const auto it = by_hash_.find(h);
    if (it == by_hash_.end() || !holds(meta(it->second), parent, blk)) break;
    hit.blocks.push_back(it->second);
    hit.hashes.push_back(h);
    parent = h;
  }
  return hit;
}

void BlockPool::check_invariants() const {
  int64_t blank = 0, lru = 0, used = 0, cached = 0;
  for (BlockId b = 0; b < total(); ++b) {
    const Meta& m = meta(b);
    PX_CHECK(m.ref >= 0, "KV block {} has a negative count {}", b, m.ref);
    if (m.ref > 0) ++used;
    if (m.cached) {
      ++cached;
      const auto it = by_hash_.find(m.hash);
      PX_CHECK(it != by_hash_.end() && it->second == b,
               "cached KV block {} is missing from the hash index", b);
      PX_CHECK(static_cast<int64_t>(m.tokens.size()) == block_size_ &&
                   hash_block(m.parent, m.tokens) == m.hash,
               "cached KV block {} does not hash to its key", b);
    }
  }
  for (BlockId b : blank_) {
    PX_CHECK(meta(b).ref == 0 && !meta(b).cached, "KV block {} is blank but held or cached", b);
    ++blank;
  }
  BlockId prev = -1;
  for (BlockId b = lru_head_; b >= 0; b = meta(b).next) {
    PX_CHECK(meta(b).ref == 0 && meta(b).cached && meta(b).prev == prev,
             "KV block {} in the eviction list is held, uncached or mislinked", b);
    PX_CHECK(++lru <= total(), "the KV eviction list has a cycle");
    prev = b;
  }
  PX_CHECK(prev == lru_tail_ && lru == lru_size_, "the KV eviction list's tail or size is wrong");
  PX_CHECK(cached == static_cast<int64_t>(by_hash_.size()),
           "the hash index has {} entries for {} cached blocks", by_hash_.size(), cached);
  PX_CHECK(blank + lru + used == total(),
           "KV blocks: {} blank + {} cached free + {} used != {} total", blank, lru, used, total());
}

}  // namespace parallm
