// After a sharded update (ZeRO-1 and ZeRO-2) each dp rank holds fresh values
// only for its own shard of the flat parameter buffer; this all-gathers the
// shards so every rank holds the whole updated model again.
#pragma once
#include "comm/communicator.h"
#include "parallel/data/shard_layout.h"

namespace parallm {

// values: the flat buffer (shards.total floats), this rank's shard current.
void all_gather_shards(comm::Communicator& dp, float* values, const ShardLayout& shards);

}  // namespace parallm
