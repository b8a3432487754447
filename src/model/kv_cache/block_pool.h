// BlockPool: the allocator of the paged KV cache's blocks (ids only; the
// storage is model/kv_cache/paged_kv_cache.h) and its prefix cache. Each block has a
// reference count; a full block whose keys are written may be registered
// under hash(parent hash, its tokens), so later prompts starting with the
// same tokens share it. A block nobody holds is free: blank, or cached and
// kept (evictable, least recently released first) until a fresh block is
// needed. Invariant: free_blocks() + used_blocks() == total().
#pragma once
#include <cstdint>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

namespace parallm {

using BlockId = int32_t;

// The cached run of blocks that starts a token sequence, and their chain hashes.
struct PrefixHit {
  std::vector<BlockId> blocks;
  std::vector<uint64_t> hashes;
};

class BlockPool {
 public:
  // The parent hash of a sequence's first block.
  static constexpr uint64_t kRootHash = 0x6C62272E07BB0142ull;
  // Chain hash of one block: a 64-bit mix of the parent's hash and the tokens,
  // in order. Lookups also compare the stored tokens and parent, so a
  // collision can never hand out another prefix's keys.
  static uint64_t hash_block(uint64_t parent, std::span<const int32_t> tokens);

  BlockPool(int64_t num_blocks, int64_t block_size);
  int64_t total() const { return static_cast<int64_t>(meta_.size()); }
  int64_t block_size() const { return block_size_; }
  int64_t free_blocks() const { return static_cast<int64_t>(blank_.size()) + lru_size_; }
  int64_t used_blocks() const { return total() - free_blocks(); }
  int64_t cached_blocks() const { return static_cast<int64_t>(by_hash_.size()); }
  int64_t evictions() const { return evictions_; }
  int32_t refcount(BlockId b) const { return meta(b).ref; }
  bool is_cached(BlockId b) const { return meta(b).cached; }

  // A block for new keys, held once and not cached: a blank block when there
  // is one, else the least recently released cached block (its prefix is
  // forgotten). Throws when no block is free.
  BlockId allocate();
  // One more holder; a free cached block leaves the eviction order.
  void retain(BlockId b);
  // One fewer holder. At zero a cached block becomes the most recently
  // released (evicted last), any other block blank.
  void release(BlockId b);

  // Registers a full block the caller holds: it contains `tokens`
  // (block_size of them) after the prefix whose chain hash is `parent`.
  // Returns the block's chain hash. When an equal block is already cached,
  // b stays unregistered (a duplicate; it becomes blank when released).
  uint64_t register_block(BlockId b, uint64_t parent, std::span<const int32_t> tokens);
  // The longest run of cached blocks holding tokens[0, n * block_size) with
  // n <= max_blocks, its first block's parent being `root` (kRootHash, or a
  // salt mixed in so that prefixes computed under another LoRA adapter are
  // never shared). Retains nothing.
  PrefixHit lookup(std::span<const int32_t> tokens, int64_t max_blocks,
                   uint64_t root = kRootHash) const;

  // Throws, naming the broken rule, unless the counts, lists and hash index
  // agree with every block's state. For tests and debug checks.
  void check_invariants() const;

 private:
  struct Meta {
    int32_t ref = 0;
    bool cached = false;
    uint64_t hash = 0, parent = 0;
    std::vector<int32_t> tokens;   // when cached: its block_size tokens
    BlockId prev = -1, next = -1;  // eviction order, while cached and free
  };
  const Meta& meta(BlockId b) const;
  Meta& meta(BlockId b) { return const_cast<Meta&>(std::as_const(*this).meta(b)); }
  void lru_push_back(BlockId b);
  void lru_remove(BlockId b);
  bool holds(const Meta& m, uint64_t parent, std::span<const int32_t> tokens) const;

  int64_t block_size_;
  std::vector<Meta> meta_;
  std::vector<BlockId> blank_;             // a stack: block 0 is handed out first
  BlockId lru_head_ = -1, lru_tail_ = -1;  // head: released longest ago
  int64_t lru_size_ = 0, evictions_ = 0;
  std::unordered_map<uint64_t, BlockId> by_hash_;
};

}  // namespace parallm
