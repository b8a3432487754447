// DataLoader: (B, T) input/target batches from llm.c token shards and
// Megatron indexed datasets, in a global order that does not depend on the
// process layout (DESIGN principle 1). A stream is sources concatenated in
// the given order (a Megatron dataset contributes its documents, each ending
// in its EOD); window w covers stream tokens [w*T, w*T + T + 1) (stride T, as
// llm.c and Megatron's GPTDataset), so there are (N - 1) / T windows. Sample s
// (counted across epochs) is window perm_e(s % W) with e = s / W, where perm_e
// is a keyed bijection of [0, W) computed from (seed, e) alone. A blend
// (`0.7 A 0.3 B`, data/data_blend.h) has one stream per source, each with its
// own key; BlendSchedule maps the global sample to (source, its sample k),
// and k is read in that source's own order. Either way any rank can fill any
// sample, and data-parallel ranks take disjoint rows of the same global batch.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "data/data_blend.h"
#include "data/token_shard.h"
#include "data/token_source.h"

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
  // spec: paths in stream order (llm.c shards, globs, Megatron prefixes) or a
  // blend in Megatron's syntax (see parse_data_spec). T: seq_len.
  // shuffle=false visits windows 0, 1, 2, ... of each stream in every epoch.
  DataLoader(std::vector<std::string> spec, int64_t T, uint64_t seed, bool shuffle);
  ~DataLoader();
  DataLoader(DataLoader&&) noexcept;
  DataLoader& operator=(DataLoader&&) noexcept;

  const std::vector<std::string>& files() const { return files_; }  // every source, expanded
  int64_t seq_len() const { return T_; }
  int64_t num_tokens() const;   // all streams together
  int64_t num_windows() const;  // all streams together
  uint64_t seed() const { return seed_; }
  bool shuffle() const { return shuffle_; }
  bool blended() const { return blend_ != nullptr; }
  const std::vector<double>& blend_weights() const;  // empty when not blended

  struct SampleRef {
    int stream;      // 0 unless blended
    int64_t window;  // window of that stream
  };
  SampleRef locate(int64_t sample) const;  // sample >= 0
  int64_t window_of_sample(int64_t sample) const { return locate(sample).window; }
  // inputs, targets: (T) each. Thread-safe: the only mutable state is the
  // blend schedule's cache, behind its own lock.
  void fill_window(int64_t sample, int32_t* inputs, int32_t* targets) const;
  // inputs, targets: (B, T), row b = sample first_sample + b.
  void fill_batch(int64_t first_sample, int64_t B, int32_t* inputs, int32_t* targets) const;
  // out[0..n) = tokens [begin, begin+n) of the streams concatenated in order,
  // crossing source boundaries.
  void read_tokens(int64_t begin, int64_t n, int32_t* out) const;

  // Largest token id in the data (scans every source; call once, not per step).
  // int64 because a uint32 shard may hold ids above INT32_MAX.
  int64_t max_token() const;
  // Throws naming the first token id < 0 or >= vocab, its file and position, and vocab.
  void validate_vocab(int64_t vocab) const;

 private:
  struct Stream;

  std::vector<std::string> files_;
  std::vector<std::unique_ptr<Stream>> streams_;
  std::unique_ptr<BlendSchedule> blend_;  // null unless blended
  int64_t T_;
  uint64_t seed_;
  bool shuffle_;
};

}  // namespace parallm
