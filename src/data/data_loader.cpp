// DataLoader: stream indexing across shards (binary search on shard starts)
// and the keyed per-epoch order (Feistel permutation with cycle walking).
// Nothing here is mutable after construction, so fills may run concurrently.
#include "data/data_loader.h"

#include <glob.h>

#include <algorithm>
#include <bit>
#include <utility>

#include "base/error.h"
#include "base/rng.h"

namespace parallm {

namespace {
constexpr int kFeistelRounds = 6;
}

int64_t permute_index(int64_t i, int64_t n, uint64_t key) {
  PX_CHECK(i >= 0 && i < n, "permute_index: index {} is outside [0, {})", i, n);
  if (n == 1) return 0;
  const int bits = 64 - std::countl_zero(static_cast<uint64_t>(n - 1));
  const int half = (bits + 1) / 2;  // balanced halves; domain 2^(2*half) < 4n
  const uint64_t mask = (uint64_t{1} << half) - 1;
  uint64_t x = static_cast<uint64_t>(i);
  // Each pass is a bijection of [0, 2^(2*half)); re-applying it until the value
  // lands in [0, n) restricts it to a bijection of [0, n) (cycle walking).
  do {
    uint64_t l = x >> half, r = x & mask;
    for (int round = 0; round < kFeistelRounds; ++round) {
      uint64_t f = mix64(key ^ mix64(r ^ (static_cast<uint64_t>(round) << 56))) & mask;
      l ^= f;
      std::swap(l, r);
    }
    x = (l << half) | r;
  } while (x >= static_cast<uint64_t>(n));
  return static_cast<int64_t>(x);
}

std::vector<std::string> expand_shard_paths(const std::vector<std::string>& paths) {
  std::vector<std::string> out;
  for (const std::string& p : paths) {
    if (p.find('*') == std::string::npos) {
      out.push_back(p);
      continue;
    }
    glob_t g{};
    int rc = ::glob(p.c_str(), 0, nullptr, &g);  // results come sorted
    if (rc == 0) {
      for (size_t k = 0; k < g.gl_pathc; ++k) out.emplace_back(g.gl_pathv[k]);
    }
    ::globfree(&g);
    PX_CHECK(rc == 0, "data pattern {} matches no files", p);
  }
  return out;
}

DataLoader::DataLoader(std::vector<std::string> files, int64_t T, uint64_t seed, bool shuffle)
    : T_(T), seed_(seed), shuffle_(shuffle), order_key_(stream_key(seed, "data.window_order")) {
  PX_CHECK(T >= 1, "data loader: seq_len must be >= 1 (got {})", T);
  PX_CHECK(!files.empty(), "data loader: no data files given");
  files_ = expand_shard_paths(files);
  shards_.reserve(files_.size());
  starts_.reserve(files_.size() + 1);
  starts_.push_back(0);
  for (const std::string& f : files_) {
    shards_.emplace_back(f);
    starts_.push_back(starts_.back() + shards_.back().size());
  }
  const int64_t n = num_tokens();
  if (n < T + 1) {
    std::string names;  // joined by hand: fmt::join of strings trips a gcc 12 warning
    for (const std::string& f : files_) names += (names.empty() ? "" : ", ") + f;
    PX_FAIL(
        "data has {} tokens in total ({}), but seq_len {} needs at least seq_len + 1 = {} "
        "tokens",
        n, names, T, T + 1);
  }
  num_windows_ = (n - 1) / T;
}

int64_t DataLoader::window_of_sample(int64_t sample) const {
  PX_CHECK(sample >= 0, "data loader: sample index {} is negative", sample);
  const int64_t pos = sample % num_windows_;
  if (!shuffle_) return pos;
  const uint64_t epoch = static_cast<uint64_t>(sample / num_windows_);
  return permute_index(pos, num_windows_, mix64(order_key_ ^ mix64(epoch)));
}

void DataLoader::read_tokens(int64_t begin, int64_t n, int32_t* out) const {
  PX_CHECK(begin >= 0 && n >= 0 && begin + n <= num_tokens(),
           "data loader: tokens [{}, {}) are outside the stream [0, {})", begin, begin + n,
           num_tokens());
  // Shard k holds stream [starts_[k], starts_[k+1]); empty shards are skipped
  // naturally because upper_bound lands past them.
  size_t k = static_cast<size_t>(std::upper_bound(starts_.begin(), starts_.end(), begin) -
                                 starts_.begin()) -
             1;
  while (n > 0) {
    const int64_t local = begin - starts_[k];
    const int64_t take = std::min(n, shards_[k].size() - local);
    shards_[k].read(local, take, out);
    out += take;
    begin += take;
    n -= take;
    ++k;
  }
}

void DataLoader::fill_window(int64_t sample, int32_t* inputs, int32_t* targets) const {
  const int64_t start = window_of_sample(sample) * T_;
  read_tokens(start, T_, inputs);
  read_tokens(start + 1, T_, targets);
}

void DataLoader::fill_batch(int64_t first_sample, int64_t B, int32_t* inputs,
                            int32_t* targets) const {
  PX_CHECK(B >= 0, "data loader: batch size {} is negative", B);
  for (int64_t b = 0; b < B; ++b) {
    fill_window(first_sample + b, inputs + b * T_, targets + b * T_);
  }
}

int64_t DataLoader::max_token() const {
  int64_t m = -1;
  for (const TokenShard& s : shards_) m = std::max(m, s.max_token());
  return m;
}

void DataLoader::validate_vocab(int64_t vocab) const {
  PX_CHECK(vocab >= 1, "data loader: vocab_size must be >= 1 (got {})", vocab);
  for (const TokenShard& s : shards_) {
    // uint16 tokens are < 65536 by construction: no scan needed.
    if (s.format() == ShardFormat::U16 && vocab >= 65536) continue;
    const int64_t i = s.find_token_at_least(vocab);
    PX_CHECK(i < 0,
             "data file {}: token id {} at position {} is outside the vocabulary (vocab_size {}); "
             "was the data tokenized for another model?",
             s.path(), s.at(i), i, vocab);
  }
}

}  // namespace parallm
