// CheckpointCadence: after each step, the run's checkpoint (every
// save_interval steps, at an exit and at the end; in the background under
// async_save) or else its snapshot (every snapshot_interval steps, always in
// the background), through one CheckpointWriter, so one save is in flight
// and one copy of the state held; and whether the run stops (exit_interval).
// Rank 0 says what each save cost the step and, once written, its size.
#pragma once
#include <cstdint>
#include <optional>
#include <ostream>

#include "checkpoint/checkpoint_writer.h"
#include "train/config/train_config.h"
#include "train/trainer.h"

namespace parallm {

class CheckpointCadence {
 public:
  CheckpointCadence(const RunConfig& rc, const CheckpointSaveOptions::ShardHook& shard_hook,
                    const Transformer& model, Trainer& trainer, comm::Communicator* world,
                    int rank, std::ostream& log);
  // Collective, after step `done` (steps done): saves when due; true when the run stops here.
  bool after_step(int64_t done);
  // Collective, after the loop: the save in flight completes on every rank.
  void finish();

 private:
  const RunConfig& rc_;
  int rank_;
  const Transformer& model_;
  Trainer& trainer_;
  std::ostream& log_;
  SaveTarget checkpoints_;  // --save
  SaveTarget snapshots_;    // --snapshot
  CheckpointWriter writer_;

  void write(const SaveTarget& to, int64_t done);
  void report(const std::optional<SavedCheckpoint>& s) const;
};

}  // namespace parallm
