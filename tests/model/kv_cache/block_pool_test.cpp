// Tests of the KV block pool (model/kv_cache/block_pool.h) and the block tables
// over it (block_tables.h): allocation and reference counts, the prefix
// cache's chained lookup, duplicate registration, least-recently-released
// eviction, and the count invariant after every operation.
#include "model/kv_cache/block_pool.h"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "base/error.h"
#include "model/kv_cache/block_tables.h"

namespace parallm {
namespace {

std::vector<int32_t> iota_tokens(int64_t n, int32_t first) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  std::iota(t.begin(), t.end(), first);
  return t;
}

std::span<const int32_t> block_of(const std::vector<int32_t>& t, int64_t i, int64_t bs) {
  return std::span<const int32_t>(t).subspan(static_cast<size_t>(i * bs), static_cast<size_t>(bs));
}

TEST(BlockPool, AllocatesEveryBlockOnceThenRefuses) {
  BlockPool pool(4, 16);
  std::vector<BlockId> got;
  for (int i = 0; i < 4; ++i) got.push_back(pool.allocate());
  EXPECT_EQ(got, (std::vector<BlockId>{0, 1, 2, 3}));
  EXPECT_EQ(pool.free_blocks(), 0);
  EXPECT_EQ(pool.used_blocks(), 4);
  EXPECT_THROW(pool.allocate(), Error);
  pool.release(2);
  EXPECT_EQ(pool.free_blocks(), 1);
  EXPECT_EQ(pool.allocate(), 2);
  for (BlockId b : got) pool.release(b);
  EXPECT_EQ(pool.free_blocks(), pool.total());
  pool.check_invariants();
}

TEST(BlockPool, ReferenceCountsKeepSharedBlocksHeld) {
  BlockPool pool(3, 4);
  const BlockId b = pool.allocate();
  const std::vector<int32_t> t = iota_tokens(4, 7);
  pool.register_block(b, BlockPool::kRootHash, t);
  pool.retain(b);
  EXPECT_EQ(pool.refcount(b), 2);
  pool.release(b);
  EXPECT_EQ(pool.used_blocks(), 1);
  pool.release(b);
  EXPECT_EQ(pool.used_blocks(), 0);
  EXPECT_TRUE(pool.is_cached(b));  // free but still reusable
  EXPECT_THROW(pool.release(b), Error);
  const BlockId blank = pool.allocate();
  pool.release(blank);
  EXPECT_THROW(pool.retain(blank), Error);  // a blank block holds nothing to share
  pool.check_invariants();
}

TEST(BlockPool, LookupReturnsTheLongestChainedRun) {
  const int64_t bs = 4;
  BlockPool pool(8, bs);
  const std::vector<int32_t> prompt = iota_tokens(14, 100);  // 3 full blocks + 2
  std::vector<BlockId> held;
  uint64_t parent = BlockPool::kRootHash;
  std::vector<uint64_t> hashes;
  for (int64_t i = 0; i < 3; ++i) {
    held.push_back(pool.allocate());
    parent = pool.register_block(held.back(), parent, block_of(prompt, i, bs));
    hashes.push_back(parent);
  }
  PrefixHit hit = pool.lookup(prompt, 100);
  EXPECT_EQ(hit.blocks, held);
  EXPECT_EQ(hit.hashes, hashes);
  EXPECT_EQ(pool.lookup(prompt, 2).blocks.size(), 2u);  // capped
  EXPECT_EQ(pool.refcount(held[0]), 1);                 // lookup retains nothing
  // A different second block ends the run after the first.
  std::vector<int32_t> other = prompt;
  other[5] = 999;
  EXPECT_EQ(pool.lookup(other, 100).blocks, std::vector<BlockId>{held[0]});
  // The same tokens after another first block are another prefix: no hit.
  std::vector<int32_t> shifted = prompt;
  shifted[0] = 999;
  EXPECT_TRUE(pool.lookup(shifted, 100).blocks.empty());
  // Fewer tokens than a block: nothing to look up.
  EXPECT_TRUE(pool.lookup(iota_tokens(3, 100), 100).blocks.empty());
  for (BlockId b : held) pool.release(b);
  // Still found once free (cached), until evicted.
  EXPECT_EQ(pool.lookup(prompt, 100).blocks, held);
  pool.check_invariants();
}

TEST(BlockPool, ChainHashDependsOnParentAndEveryToken) {
  const std::vector<int32_t> a = {1, 2, 3, 4}, b = {1, 2, 3, 5}, c = {2, 1, 3, 4};
  const uint64_t h = BlockPool::hash_block(BlockPool::kRootHash, a);
  EXPECT_EQ(h, BlockPool::hash_block(BlockPool::kRootHash, a));
  EXPECT_NE(h, BlockPool::hash_block(BlockPool::kRootHash, b));
  EXPECT_NE(h, BlockPool::hash_block(BlockPool::kRootHash, c));
  EXPECT_NE(h, BlockPool::hash_block(h, a));
  EXPECT_NE(BlockPool::hash_block(1, {}), BlockPool::hash_block(2, {}));
}

TEST(BlockPool, DuplicateBlocksStayUncached) {
  BlockPool pool(3, 2);
  const std::vector<int32_t> t = {5, 6};
  const BlockId a = pool.allocate(), b = pool.allocate();
  const uint64_t ha = pool.register_block(a, BlockPool::kRootHash, t);
  EXPECT_EQ(pool.register_block(b, BlockPool::kRootHash, t), ha);
  EXPECT_TRUE(pool.is_cached(a));
  EXPECT_FALSE(pool.is_cached(b));
  EXPECT_EQ(pool.cached_blocks(), 1);
  EXPECT_EQ(pool.register_block(a, BlockPool::kRootHash, t), ha);  // again: a no-op
  EXPECT_THROW(pool.register_block(a, BlockPool::kRootHash, std::vector<int32_t>{7, 8}), Error);
  EXPECT_THROW(pool.register_block(b, BlockPool::kRootHash, std::vector<int32_t>{7}), Error);
  pool.release(a);
  pool.release(b);
  pool.check_invariants();
  EXPECT_EQ(pool.free_blocks(), 3);
}

// Free cached blocks are evicted least recently released first, and only
// when no blank block is left; retaining one takes it out of that order.
TEST(BlockPool, EvictsLeastRecentlyReleasedCachedBlockFirst) {
  BlockPool pool(4, 2);
  std::vector<std::vector<int32_t>> prompts;
  std::vector<BlockId> blocks;
  for (int i = 0; i < 3; ++i) {
    prompts.push_back({10 * i, 10 * i + 1});
    blocks.push_back(pool.allocate());
    pool.register_block(blocks.back(), BlockPool::kRootHash, prompts.back());
  }
  // Released in the order 1, 0, 2.
  for (int i : {1, 0, 2}) pool.release(blocks[static_cast<size_t>(i)]);
  EXPECT_EQ(pool.free_blocks(), 4);
  EXPECT_EQ(pool.allocate(), 3);  // the blank block goes first
  EXPECT_EQ(pool.evictions(), 0);
  pool.retain(blocks[1]);  // a hit: block 1 is in use again
  EXPECT_EQ(pool.allocate(), blocks[0]);
  EXPECT_EQ(pool.allocate(), blocks[2]);
  EXPECT_EQ(pool.evictions(), 2);
  EXPECT_TRUE(pool.lookup(prompts[0], 1).blocks.empty());
  EXPECT_TRUE(pool.lookup(prompts[2], 1).blocks.empty());
  EXPECT_EQ(pool.lookup(prompts[1], 1).blocks, std::vector<BlockId>{blocks[1]});
  EXPECT_THROW(pool.allocate(), Error);
  pool.check_invariants();
  EXPECT_EQ(pool.free_blocks() + pool.used_blocks(), pool.total());
}

TEST(BlockTables, AppendsBlocksAsPositionsGrow) {
  BlockPool pool(5, 4);
  BlockTables t(pool);
  t.start(7, {});
  EXPECT_EQ(t.blocks_needed(7, 5), 2);
  ASSERT_TRUE(t.append_slots(7, 5));
  EXPECT_EQ(t.slots(7), 5);
  EXPECT_EQ(t.table(7).size(), 2u);
  EXPECT_EQ(t.blocks_needed(7, 3), 0);  // fits the second block's free slots
  ASSERT_TRUE(t.append_slots(7, 3));
  EXPECT_EQ(t.table(7).size(), 2u);
  EXPECT_EQ(t.blocks_needed(7, 1), 1);
  // 3 free blocks hold 12 positions; 13 do not fit and nothing changes.
  EXPECT_FALSE(t.append_slots(7, 13));
  EXPECT_EQ(t.slots(7), 8);
  EXPECT_EQ(pool.used_blocks(), 2);
  ASSERT_TRUE(t.append_slots(7, 12));
  EXPECT_EQ(pool.free_blocks(), 0);
  t.release(7);
  EXPECT_FALSE(t.has(7));
  EXPECT_EQ(pool.free_blocks(), 5);
  t.release(7);  // unknown: no-op
  EXPECT_THROW(t.slots(7), Error);
  EXPECT_THROW(t.append_slots(7, 1), Error);
  pool.check_invariants();
}

TEST(BlockTables, SharesCachedBlocksAndReleasesTailFirst) {
  const int64_t bs = 2;
  BlockPool pool(6, bs);
  BlockTables t(pool);
  const std::vector<int32_t> prompt = {1, 2, 3, 4, 5};
  t.start(1, {});
  ASSERT_TRUE(t.append_slots(1, 5));
  uint64_t h = BlockPool::kRootHash;
  for (int64_t i = 0; i < 2; ++i)
    h = pool.register_block(t.table(1)[i], h, block_of(prompt, i, bs));
  const PrefixHit hit = pool.lookup(prompt, 2);
  ASSERT_EQ(hit.blocks.size(), 2u);
  t.start(2, hit.blocks);
  EXPECT_EQ(t.slots(2), 4);
  EXPECT_EQ(pool.refcount(hit.blocks[0]), 2);
  EXPECT_THROW(t.start(2, {}), Error);
  ASSERT_TRUE(t.append_slots(2, 3));
  EXPECT_EQ(t.table(2).size(), 4u);
  EXPECT_EQ(pool.used_blocks(), 5);  // 3 of seq 1, 2 more of seq 2
  t.release(1);
  EXPECT_EQ(pool.used_blocks(), 4);
  t.release(2);
  EXPECT_EQ(pool.used_blocks(), 0);
  // Both cached blocks are free now; the tail (block 1 of the prompt) was
  // released before the head, so it is evicted first once blanks run out.
  for (int i = 0; i < 4; ++i) pool.allocate();
  EXPECT_EQ(pool.allocate(), hit.blocks[1]);
  EXPECT_EQ(pool.lookup(prompt, 2).blocks, std::vector<BlockId>{hit.blocks[0]});
  pool.check_invariants();
}

}  // namespace
}  // namespace parallm
