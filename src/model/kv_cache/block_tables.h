// BlockTables: which blocks of the pool hold each sequence's keys and values
// (logical block i holds positions i*block_size ..), and how many positions
// each table has room reserved for. Only full blocks are ever shared (they
// come from the prefix cache, and a sequence writes only at positions past
// everything it shares), so tables need no copy-on-write. Invariant: a
// table holds exactly ceil(slots / block_size) blocks, each retained once.
#pragma once
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "model/kv_cache/block_pool.h"

namespace parallm {

class BlockTables {
 public:
  explicit BlockTables(BlockPool& pool) : pool_(pool) {}
  BlockTables(const BlockTables&) = delete;
  BlockTables& operator=(const BlockTables&) = delete;
  ~BlockTables();  // releases every table's blocks

  BlockPool& pool() const { return pool_; }
  bool has(uint64_t seq) const { return tables_.contains(seq); }
  int64_t size() const { return static_cast<int64_t>(tables_.size()); }
  // Positions the table has room for (written, or reserved for this step).
  int64_t slots(uint64_t seq) const { return entry(seq).slots; }
  const std::vector<BlockId>& table(uint64_t seq) const { return entry(seq).blocks; }

  // Starts an unknown sequence on cached full blocks (possibly none): each is
  // retained, and the first cached.size() * block_size positions are its.
  void start(uint64_t seq, std::span<const BlockId> cached);
  // Fresh blocks append_slots(seq, n) would take from the pool.
  int64_t blocks_needed(uint64_t seq, int64_t n) const;
  // Reserves the next n positions, allocating blocks. Returns false and
  // changes nothing when the pool has fewer free blocks than needed.
  bool append_slots(uint64_t seq, int64_t n);
  // Gives back the positions from `slots` on (speculative decoding's
  // rejected drafts), releasing the blocks no position below it uses.
  void truncate_slots(uint64_t seq, int64_t slots);
  // Releases the sequence's blocks, last first (so among blocks freed
  // together the eviction order drops a prefix's tail before its head, which
  // later prompts could still reuse), and forgets it. Unknown ids: no-op.
  void release(uint64_t seq);

 private:
  struct Entry {
    std::vector<BlockId> blocks;
    int64_t slots = 0;
  };
  const Entry& entry(uint64_t seq) const;
  BlockPool& pool_;
  std::unordered_map<uint64_t, Entry> tables_;
};

}  // namespace parallm
