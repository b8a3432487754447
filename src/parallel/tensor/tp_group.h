// TpGroup: what a layer needs to run tensor parallel: the tp communicator
// (null or size 1: no tensor parallelism), whether sequence parallelism is
// on, and the counters its collectives add to. Passed explicitly to the
// model at construction (DESIGN principle 3); copies share the counters.
// Invariant: every rank of the group builds the same model with the same
// TpGroup settings, so collectives line up call for call.
#pragma once
#include <chrono>
#include <cstdint>
#include <memory>

#include "comm/communicator.h"

namespace parallm {

// Payload bytes this rank handed to tp collectives, split by kind: "tp" is
// all-reduce traffic, "sp" the all-gather / reduce-scatter of sequence
// parallelism (per rank: the buffer it contributes). tp collectives are
// blocking and sit on the critical path, so the wall time spent inside them
// is exposed communication (waiting for the slowest rank included).
struct TpCommCounters {
  int64_t tp_bytes = 0, sp_bytes = 0;
  int64_t tp_collectives = 0, sp_collectives = 0;
  double seconds = 0.0;
};

// Adds the lifetime of the object to counters.seconds (one collective call).
class TpCommTimer {
 public:
  explicit TpCommTimer(TpCommCounters& c) : c_(c), t0_(std::chrono::steady_clock::now()) {}
  ~TpCommTimer() {
    c_.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  }
  TpCommTimer(const TpCommTimer&) = delete;
  TpCommTimer& operator=(const TpCommTimer&) = delete;

 private:
  TpCommCounters& c_;
  std::chrono::steady_clock::time_point t0_;
};

struct TpGroup {
  comm::Communicator* comm = nullptr;
  bool sequence_parallel = false;
  std::shared_ptr<TpCommCounters> counters = std::make_shared<TpCommCounters>();

  int size() const { return comm ? comm->size() : 1; }
  int rank() const { return comm ? comm->rank() : 0; }
  bool active() const { return size() > 1; }
  // Sequence parallel only means something with more than one rank.
  bool sp() const { return sequence_parallel && active(); }
};

// Rows of the residual stream this rank holds: N, or N / tp under sequence
// parallelism (a contiguous block of the B*T token rows; B == 1 makes it
// exactly a slice of the sequence). Throws when N does not divide.
int64_t tp_local_rows(const TpGroup& g, int64_t N);

}  // namespace parallm
