#include "parallel/zero/shard_sync.h"

namespace parallm {

void all_gather_shards(comm::Communicator& dp, float* v, const ShardLayout& shards,
                       CommStats& stats) {
  const int r = dp.rank();
  ExposedTimer t(stats);
  if (shards.even()) {  // in place: this rank's block already sits at r * S
    const auto S = static_cast<size_t>(shards.shard_size());
    dp.all_gather(v + r * S, v, S, DType::F32);
    stats.bytes += static_cast<int64_t>(S * 4);
    ++stats.collectives;
    return;
  }
  // Uneven: the last shard is short, so each owner broadcasts its exact range
  // (no padded copy of the whole buffer is needed).
  for (int o = 0; o < shards.dp; ++o) {
    const int64_t n = shards.end(o) - shards.begin(o);
    if (n == 0) continue;
    dp.broadcast(v + shards.begin(o), static_cast<size_t>(n), DType::F32, o);
    if (o == r) stats.bytes += n * 4;
    ++stats.collectives;
  }
}

}  // namespace parallm
