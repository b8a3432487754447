// BlockTables: per-sequence block lists over a BlockPool (see block_tables.h).
#include "model/kv_cache/block_tables.h"

#include "base/error.h"

namespace parallm {

BlockTables::~BlockTables() {
  for (auto& [seq, e] : tables_)
    for (auto it = e.blocks.rbegin(); it != e.blocks.rend(); ++it) pool_.release(*it);
}

const BlockTables::Entry& BlockTables::entry(uint64_t seq) const {
  const auto it = tables_.find(seq);
  PX_CHECK(it != tables_.end(), "sequence {} has no KV block table", seq);
  return it->second;
}

void BlockTables::start(uint64_t seq, std::span<const BlockId> cached) {
  PX_CHECK(!has(seq), "sequence {} already has a KV block table", seq);
  Entry e;
  for (BlockId b : cached) {
    pool_.retain(b);
    e.blocks.push_back(b);
  }
  e.slots = static_cast<int64_t>(cached.size()) * pool_.block_size();
  tables_.emplace(seq, std::move(e));
}

int64_t BlockTables::blocks_needed(uint64_t seq, int64_t n) const {
  PX_CHECK(n >= 0, "cannot reserve {} KV slots for sequence {}", n, seq);
  const Entry& e = entry(seq);
  const int64_t bs = pool_.block_size();
  return (e.slots + n + bs - 1) / bs - static_cast<int64_t>(e.blocks.size());
}

bool BlockTables::append_slots(uint64_t seq, int64_t n) {
  const int64_t need = blocks_needed(seq, n);
  if (need > pool_.free_blocks()) return false;
  Entry& e = tables_.at(seq);
  for (int64_t i = 0; i < need; ++i) e.blocks.push_back(pool_.allocate());
  e.slots += n;
  return true;
}

void BlockTables::truncate_slots(uint64_t seq, int64_t slots) {
  Entry& e = tables_.at(seq);
  PX_CHECK(slots >= 0 && slots <= e.slots, "sequence {}: truncating {} slots to {}", seq, e.slots,
           slots);
  const size_t keep = static_cast<size_t>((slots + pool_.block_size() - 1) / pool_.block_size());
  while (e.blocks.size() > keep) {
    pool_.release(e.blocks.back());
    e.blocks.pop_back();
  }
  e.slots = slots;
}

void BlockTables::release(uint64_t seq) {
  const auto it = tables_.find(seq);
  if (it == tables_.end()) return;
  const std::vector<BlockId>& blocks = it->second.blocks;
  for (auto b = blocks.rbegin(); b != blocks.rend(); ++b) pool_.release(*b);
  tables_.erase(it);
}

}  // namespace parallm
