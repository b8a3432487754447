// A job in which rank 1 fails in the middle of a run of all-reduces, in one of
// several ways (kill, abort, error, exit, hang), for the comm.fault.* tests:
// the other ranks must not wait forever. Usage: comm_fault_job MODE.
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "base/error.h"
#include "comm/mpi/mpi_runtime.h"

using namespace parallm;
using namespace parallm::comm;

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  PX_CHECK(mode == "kill" || mode == "abort" || mode == "error" || mode == "exit" || mode == "hang",
           "usage: comm_fault_job kill|abort|error|exit|hang (got '{}')", mode);
  return run_mpi_job([&](MpiRuntime& rt) {
    CommOptions opts;
    opts.timeout = std::chrono::seconds(3);  // bounds the blocking calls of "hang"
    auto world = rt.world(opts);
    std::vector<float> buf(1 << 20, 1.0f);
    for (int it = 0; it < 50; ++it) {
      if (world->rank() == 1 && it == 3) {
        // The others are inside all_reduce #4; for kill, abort and error this
        // rank has started its part of it too (its worker thread is in MPI).
        if (mode == "exit") std::_Exit(3);
        if (mode == "hang") std::this_thread::sleep_for(std::chrono::hours(1));
        Work w =
            world->all_reduce_async(buf.data(), buf.data(), buf.size(), DType::F32, ReduceOp::Sum);
        w.test();
        if (mode == "kill") raise(SIGKILL);
        if (mode == "abort") std::abort();
        if (mode == "error") PX_FAIL("injected failure in all_reduce #{}", it + 1);
      }
      world->all_reduce(buf.data(), buf.size(), DType::F32, ReduceOp::Sum);
    }
    return 0;
  });
}
