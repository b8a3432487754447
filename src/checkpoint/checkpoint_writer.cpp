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

CheckpointWriter::CheckpointWriter(CheckpointSaveOptions opts, bool async,
                                   comm::Communicator* world, std::chrono::milliseconds timeout)
    : opts_(std::move(opts)), async_(async), world_(world), timeout_(timeout) {}

CheckpointWriter::~CheckpointWriter() {
  cancel_ = true;
  if (thread_.joinable()) thread_.join();
}

std::optional<SavedCheckpoint> CheckpointWriter::join() {
  if (!thread_.joinable()) return std::nullopt;
  thread_.join();
  buffers_ = std::move(pending_->host);  // kept for the next save
  pending_.reset();
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
  return in_flight_;
}

SaveResult CheckpointWriter::save(const TrainingState& state, const Transformer& model,
                                  DataParallel& dp) {
  const auto t0 = Clock::now();  // the wait for the save before counts as stall
  SaveResult r;
  r.completed = join();
  if (!async_) {
    SavedCheckpoint s;
    s.dir = save_checkpoint(opts_, state, model, dp, world_, timeout_);
    s.stall_s = s.write_s = seconds_since(t0);
    r.stall_s = s.stall_s;
    r.completed = s;
    return r;
  }
  pending_ = prepare_save(opts_, state, model, dp, world_, true, std::move(buffers_));
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
