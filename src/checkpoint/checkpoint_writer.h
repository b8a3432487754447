// CheckpointWriter: the run's checkpoints and snapshots, written
// synchronously or in the background. An asynchronous save stalls the step only for the collective
// prepare phase (a barrier and a copy of this rank's pieces into host
// memory); a thread of its own then writes the shard and digest and, on
// rank 0, the manifest (last) and `latest`. A save waits for the one before
// it, so at most one is in flight and the copies are held once (and kept
// between saves: a second copy of the state is the price of not stalling). Invariant:
// a save interrupted anywhere (a rank killed mid-write) leaves the previous
// checkpoint complete and `latest` naming it.
#pragma once
#include <atomic>
#include <chrono>
#include <exception>
#include <optional>
#include <string>
#include <thread>

#include "checkpoint/checkpoint_save.h"

namespace parallm {

struct SavedCheckpoint {
  std::string dir;
  double stall_s = 0;  // the training thread's time in the save
  double write_s = 0;  // from the step boundary to the manifest (async: in the background)
  bool async = false;
};

// What a save() call did: its stall, and the checkpoint it completed (a
// synchronous save itself; an asynchronous one, the save before it).
struct SaveResult {
  double stall_s = 0;
  std::optional<SavedCheckpoint> completed;
};

// Where and how one save goes: a run's checkpoints (--save, background
// under --async-save) and its snapshots (--snapshot, always background)
// share one writer, so one save is in flight and one copy of the state held.
struct SaveTarget {
  CheckpointSaveOptions opts;
  bool async = false;
};

class CheckpointWriter {
 public:
  CheckpointWriter(comm::Communicator* world, std::chrono::milliseconds timeout);
  // Stops a write in flight (an error is ending the job; the save is lost).
  ~CheckpointWriter();
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;

  // For a run with background saves: fills the copies' memory in the
  // background now (a first touch of 1.5 GB takes seconds under a
  // hypervisor), so the first save's stall is a copy at memory speed. Not
  // collective.
  void warm_up(const Transformer& model, DataParallel& dp);
  // Collective, at a step boundary; waits for the save in flight first.
  SaveResult save(const SaveTarget& to, const TrainingState& state, const Transformer& model,
                  DataParallel& dp);
  // Collective: the save in flight, complete on every rank, if any.
  std::optional<SavedCheckpoint> finish();

 private:
  comm::Communicator* world_;
  std::chrono::milliseconds timeout_;
  std::thread thread_;
  std::thread warm_up_;
  std::atomic<bool> cancel_{false};
  std::exception_ptr error_;
  std::optional<PreparedSave> pending_;
  CopyArena buffers_;  // the last save's copies, reused
  SavedCheckpoint in_flight_;
  std::optional<SavedCheckpoint> join();
};

}  // namespace parallm
