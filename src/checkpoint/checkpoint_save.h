// Saving a distributed checkpoint: every rank writes one shard file of the
// pieces it is responsible for into DIR/step-NNNNNNN.tmp/ and beside it its
// size and digest; rank 0 adds the training state and, once every rank's
// digest is on disk, the manifest of checksums (last), renames the directory
// to its final name and replaces `latest`. Two phases: prepare (collective,
// at a step boundary: the directory, and the pieces copied when asked) and
// complete (no collectives, so it may run on a thread of its own while
// training goes on: checkpoint_writer.h). Ranks holding identical copies split the writing: each dp rank
// writes its ZeRO flat range of the values (and of replicated moments), and
// tp-replicated tensors (and shards several tp ranks share) are written by
// their first holder only; pipeline stages hold different tensors, and the
// last stage's copy of a tied table is written by the first stage. Invariant: a save
// interrupted anywhere leaves the previous checkpoint and `latest` intact and
// no directory a load would take for complete.
#pragma once
#include <atomic>
#include <chrono>
#include <functional>
#include <string>

#include "comm/communicator.h"
#include "io/checkpoint/shard_file.h"
#include "model/transformer.h"
#include "parallel/data/data_parallel.h"
#include "checkpoint/checkpoint_state.h"
#include "checkpoint/copy_arena.h"

namespace parallm {

struct CheckpointSaveOptions {
  std::string dir;
  int keep = 0;  // keep the newest N complete checkpoints (0: all)
  // Test hook, on each rank after its shard file is written (fault tests
  // kill a rank here, before the manifest exists).
  using ShardHook = std::function<void(int rank, const std::string& shard_path)>;
  ShardHook after_shard;
};

// A save between its phases: what this rank writes, with its own copy of
// the values when `copy` (or the model lives on a device).
struct PreparedSave {
  CheckpointSaveOptions opts;
  TrainingState state;
  int rank = 0, size = 1;
  std::string name, tmp;  // "step-NNNNNNN", its temporary directory
  std::vector<CheckpointPiece> pieces;
  CopyArena host;  // the copies the pieces point into (when copied)
};

// Collective over world (null: one process). The state's step names the directory.
// `reuse`: the copies of an earlier save, whose memory is taken over.
PreparedSave prepare_save(const CheckpointSaveOptions& opts, const TrainingState& state,
                          const Transformer& model, DataParallel& dp, comm::Communicator* world,
                          bool copy, CopyArena reuse = {});
// Writes this rank's shard and digest; on rank 0 waits (up to `timeout`, or
// until *cancel) for every rank's digest, then writes the state and the
// manifest and publishes the directory. Returns the final step directory.
std::string complete_save(const PreparedSave& p, std::chrono::milliseconds timeout,
                          const std::atomic<bool>* cancel);

// Both phases in turn, then a barrier. Returns the final step directory path.
std::string save_checkpoint(const CheckpointSaveOptions& opts, const TrainingState& state,
                            const Transformer& model, DataParallel& dp, comm::Communicator* world,
                            std::chrono::milliseconds timeout = std::chrono::minutes(5));

// The pieces this rank writes (exposed for tests): values, and moments when
// this rank holds an optimizer.
std::vector<CheckpointPiece> checkpoint_pieces(const Transformer& model, DataParallel& dp);

}  // namespace parallm
