// CheckpointWriter: the run's checkpoints, written synchronously or in the
// background. An asynchronous save stalls the step only for the collective
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

class CheckpointWriter {
 public:
  CheckpointWriter(CheckpointSaveOptions opts, bool async, comm::Communicator* world,
                   std::chrono::milliseconds timeout);
  // Stops a write in flight (an error is ending the job; the save is lost).
  ~CheckpointWriter();
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;

  // Collective, at a step boundary; waits for the save in flight first.
  SaveResult save(const TrainingState& state, const Transformer& model, DataParallel& dp);
  bool async() const { return async_; }
  // Collective: the save in flight, complete on every rank, if any.
  std::optional<SavedCheckpoint> finish();

 private:
  CheckpointSaveOptions opts_;
  bool async_;
  comm::Communicator* world_;
  std::chrono::milliseconds timeout_;
  std::thread thread_;
  std::atomic<bool> cancel_{false};
  std::exception_ptr error_;
  std::optional<PreparedSave> pending_;
  std::vector<std::vector<float>> buffers_;  // the last save's copies, reused
  SavedCheckpoint in_flight_;
  std::optional<SavedCheckpoint> join();
};

}  // namespace parallm
