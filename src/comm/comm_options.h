// CommOptions: per-communicator settings, inherited by the groups split from
// it. The timeout bounds every wait: an async wait throws an Error naming the
// operation; a blocking call that overruns is reported by the watchdog, which
// aborts the job (a blocking MPI call cannot be interrupted).
#pragma once
#include <chrono>

namespace parallm {
class Allocator;
}

namespace parallm::comm {

struct CommOptions {
  // Longest any operation may take before it is reported (CLI: --comm-timeout).
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};
  // Before each collective, all ranks compare (operation, count, dtype, op,
  // root, sequence number) with one small all-gather, so that mismatched
  // collectives fail at once with both calls named instead of hanging. Costs
  // one small-message collective per call (docs/comm.md).
  bool check_collectives = false;
  // Staging buffers (fp32 copies for bf16/f16 reductions) are allocated here
  // under MemTag::Communication when set; from the heap otherwise. Must
  // outlive the communicator.
  Allocator* allocator = nullptr;
};

}  // namespace parallm::comm
