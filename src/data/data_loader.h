// DataLoader: (B, T) input/target batches from llm.c token shards in a global
// order that does not depend on the process layout (DESIGN principle 1).
// The shards' tokens, concatenated in the given order, form one stream; window
// w covers stream tokens [w*T, w*T + T + 1) (stride T, as llm.c), so there are
// (N - 1) / T windows. Sample s (counted across epochs) is window
// perm_e(s % W) with e = s / W, where perm_e is a keyed bijection of [0, W)
// computed from (seed, e) alone: any rank can fill any sample, and data-parallel
// ranks take disjoint rows of the same global batch. Targets = inputs shifted by one.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "data/token_shard.h"

namespace parallm {

// Keyed pseudorandom bijection of [0, n): a 6-round Feistel network over the
// smallest even bit width covering n, cycle-walked back into range (expected
// < 4 passes). O(1) memory, so nothing of size W is built or stored per epoch.
int64_t permute_index(int64_t i, int64_t n, uint64_t key);

// Paths containing '*' are expanded with glob(3) (sorted); others pass through.
// Throws when a pattern matches nothing.
std::vector<std::string> expand_shard_paths(const std::vector<std::string>& paths);

class DataLoader {
 public:
  // files: shard paths in stream order (see expand_shard_paths). T: seq_len.
  // shuffle=false visits windows 0, 1, 2, ... in every epoch.
  DataLoader(std::vector<std::string> files, int64_t T, uint64_t seed, bool shuffle);

  const std::vector<std::string>& files() const { return files_; }  // expanded
  int64_t seq_len() const { return T_; }
  int64_t num_tokens() const { return starts_.back(); }
  int64_t num_windows() const { return num_windows_; }
  uint64_t seed() const { return seed_; }
  bool shuffle() const { return shuffle_; }

  int64_t window_of_sample(int64_t sample) const;  // sample >= 0
  // inputs, targets: (T) each. Thread-safe: the loader has no mutable state.
  void fill_window(int64_t sample, int32_t* inputs, int32_t* targets) const;
  // inputs, targets: (B, T), row b = sample first_sample + b.
  void fill_batch(int64_t first_sample, int64_t B, int32_t* inputs, int32_t* targets) const;
  // out[0..n) = stream tokens [begin, begin+n), crossing shard boundaries.
  void read_tokens(int64_t begin, int64_t n, int32_t* out) const;

  // Largest token id in the data (scans every shard; call once, not per step).
  // int64 because a uint32 shard may hold ids above INT32_MAX.
  int64_t max_token() const;
  // Throws naming the first token id >= vocab, its file and position, and vocab.
  void validate_vocab(int64_t vocab) const;

 private:
  std::vector<std::string> files_;
  std::vector<TokenShard> shards_;
  std::vector<int64_t> starts_;  // starts_[i] = stream offset of shard i; back() = N
  int64_t T_;
  uint64_t seed_;
  bool shuffle_;
  uint64_t order_key_;  // stream key for the per-epoch permutations
  int64_t num_windows_ = 0;
};

}  // namespace parallm
