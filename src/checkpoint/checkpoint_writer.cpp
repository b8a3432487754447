#include "checkpoint/checkpoint_writer.h"

#include <sys/resource.h>
#include <unistd.h>

#include "base/error.h"

namespace parallm {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

}  // namespace

CheckpointWriter::CheckpointWriter(comm::Communicator* world, std::chrono::milliseconds timeout)
    : world_(world), timeout_(timeout) {}

CheckpointWriter::~CheckpointWriter() {
  cancel_ = true;
  if (warm_up_.joinable()) warm_up_.join();
  if (thread_.joinable()) thread_.join();
}

void CheckpointWriter::warm_up(const Transformer& model, DataParallel& dp) {
  if (warm_up_.joinable()) return;
  size_t floats = 0;
  for (const CheckpointPiece& p : checkpoint_pieces(model, dp))
    floats += static_cast<size_t>(p.slice.numel());
  warm_up_ = std::thread([this, floats] {
    (void)::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), 10);
    buffers_.prefault(floats);
  });
}

std::optional<SavedCheckpoint> CheckpointWriter::join() {
  if (!thread_.joinable()) return std::nullopt;
  thread_.join();
  buffers_ = std::move(pending_->host);  // kept for the next save
  pending_.reset();
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
  return in_flight_;
}

SaveResult CheckpointWriter::save(const SaveTarget& to, const TrainingState& state,
                                  const Transformer& model, DataParallel& dp) {
  const auto t0 = Clock::now();  // the wait for the save before counts as stall
  if (warm_up_.joinable()) warm_up_.join();
  SaveResult r;
  r.completed = join();
  if (!to.async) {
    SavedCheckpoint s;
    s.dir = save_checkpoint(to.opts, state, model, dp, world_, timeout_);
    s.stall_s = s.write_s = seconds_since(t0);
    r.stall_s = s.stall_s;
    r.completed = s;
    return r;
  }
  pending_ = prepare_save(to.opts, state, model, dp, world_, true, std::move(buffers_));
  in_flight_ = SavedCheckpoint{"", seconds_since(t0), 0, true};
  thread_ = std::thread([this, t0] {
    // The training threads come first: the writer takes the cores they
    // leave (page copies and hashing), not theirs. Linux nices a thread
    // through its own id.
    (void)::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), 10);
    try {
      in_flight_.dir = complete_save(*pending_, timeout_, &cancel_);
      in_flight_.write_s = seconds_since(t0);
    } catch (...) {
      error_ = std::current_exception();
    }
  });
  r.stall_s = in_flight_.stall_s;
  return r;
}

std::optional<SavedCheckpoint> CheckpointWriter::finish() {
  std::optional<SavedCheckpoint> last = join();
  if (world_) world_->barrier();  // rank 0's manifest is down before anyone goes on
  return last;
}

}  // namespace parallm
