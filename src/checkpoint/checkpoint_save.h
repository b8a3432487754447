// Saving a distributed checkpoint: every rank writes one shard file of the
// pieces it is responsible for into DIR/step-NNNNNNN.tmp/, rank 0 adds the
// training state and, once every rank's file is on disk, the manifest of
// checksums (last), renames the directory to its final name and replaces
// `latest`. Ranks holding identical copies split the writing: each dp rank
// writes its ZeRO flat range of the values (and of replicated moments), and
// tp-replicated tensors (and shards several tp ranks share) are written by
// their first holder only; pipeline stages hold different tensors, and the
// last stage's copy of a tied table is written by the first stage. Invariant: a save
// interrupted anywhere leaves the previous checkpoint and `latest` intact and
// no directory a load would take for complete.
#pragma once
#include <functional>
#include <string>

#include "comm/communicator.h"
#include "io/checkpoint/shard_file.h"
#include "model/transformer.h"
#include "parallel/data/data_parallel.h"
#include "checkpoint/checkpoint_state.h"

namespace parallm {

struct CheckpointSaveOptions {
  std::string dir;
  int keep = 0;  // keep the newest N complete checkpoints (0: all)
  // Test hook, on each rank after its shard file is written (fault tests
  // kill a rank here, before the manifest exists).
  std::function<void(int rank, const std::string& shard_path)> after_shard;
};

// Collective over world (null: one process). The state's step names the
// directory. Returns the final step directory path.
std::string save_checkpoint(const CheckpointSaveOptions& opts, const TrainingState& state,
                            const Transformer& model, DataParallel& dp, comm::Communicator* world);

// The pieces this rank writes (exposed for tests): values, and moments when
// this rank holds an optimizer.
std::vector<CheckpointPiece> checkpoint_pieces(const Transformer& model, DataParallel& dp);

}  // namespace parallm
