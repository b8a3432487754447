// SequenceInbox (see sequence_inbox.h).
#include "infer/serve/sequence_inbox.h"

namespace parallm::serve {

SequenceSink SequenceInbox::sink_for(size_t choice) {
  return [self = shared_from_this(), choice](const SequenceUpdate& u) {
    {
      std::lock_guard<std::mutex> lock(self->mu_);
      self->pending_.push_back({choice, u, Clock::now()});
    }
    self->cv_.notify_one();
  };
}

std::vector<SequenceInbox::Arrival> SequenceInbox::take(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, timeout, [&] { return !pending_.empty(); });
  std::vector<Arrival> out(std::make_move_iterator(pending_.begin()),
                           std::make_move_iterator(pending_.end()));
  pending_.clear();
  return out;
}

}  // namespace parallm::serve
