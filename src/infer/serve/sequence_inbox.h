// SequenceInbox: where the engine's sinks leave the updates of one request's
// sequences, stamped with their arrival time, for the request's HTTP thread
// to take. The engine thread only appends and notifies, so a slow client
// never slows the engine. Held by shared_ptr: the sinks keep it alive for
// as long as the engine may still call them.
#pragma once
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "infer/serve/engine.h"

namespace parallm::serve {

using Clock = std::chrono::steady_clock;

class SequenceInbox : public std::enable_shared_from_this<SequenceInbox> {
 public:
  struct Arrival {
    size_t choice = 0;
    SequenceUpdate update;
    Clock::time_point at;
  };

  // The sink of one choice's sequence.
  SequenceSink sink_for(size_t choice);
  // Everything that arrived since the last call, waiting up to timeout for
  // the first arrival (empty when none came).
  std::vector<Arrival> take(std::chrono::milliseconds timeout);

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Arrival> pending_;
};

}  // namespace parallm::serve
