#include "parallel/zero/shard_sync.h"

namespace parallm {

void all_gather_shards(comm::Communicator& dp, float* v, const ShardLayout& shards) {
  const int r = dp.rank();
  if (shards.even()) {  // in place: this rank's block already sits at r * S
    const auto S = static_cast<size_t>(shards.shard_size());
    dp.all_gather(v + r * S, v, S, DType::F32);
    return;
  }
  // Uneven: the last shard is short, so each owner broadcasts its exact range
  // (no padded copy of the whole buffer is needed).
  for (int o = 0; o < shards.dp; ++o) {
    const int64_t n = shards.end(o) - shards.begin(o);
    if (n == 0) continue;
    dp.broadcast(v + shards.begin(o), static_cast<size_t>(n), DType::F32, o);
  }
}

}  // namespace parallm
