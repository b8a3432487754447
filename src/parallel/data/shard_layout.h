// ShardLayout: how ZeRO splits one flat buffer of `total` elements over dp
// ranks: rank r owns [r * S, min((r + 1) * S, total)) with S = ceil(total /
// dp). Per-rank state (optimizer moments, owned gradients) is allocated with
// S elements on every rank, so shards are equal; the padding past `total`
// is never read into a result.
#pragma once
#include <algorithm>
#include <cstdint>

namespace parallm {

struct ShardLayout {
  int64_t total = 0;
  int dp = 1;

  int64_t shard_size() const { return (total + dp - 1) / dp; }
  int64_t padded_total() const { return shard_size() * dp; }
  int64_t begin(int r) const { return std::min<int64_t>(total, r * shard_size()); }
  int64_t end(int r) const { return std::min<int64_t>(total, (r + 1) * shard_size()); }
  bool even() const { return total % dp == 0; }
};

}  // namespace parallm
