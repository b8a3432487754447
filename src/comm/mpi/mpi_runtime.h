// MpiRuntime: the process's MPI lifetime, one RAII object created by main or
// a test and passed explicitly (DESIGN principle 3): MPI_Init_thread (thread-
// multiple when offered), errors returned as codes and turned into Errors,
// the watchdog that bounds blocking calls, and MPI_Finalize. run_mpi_job
// wraps a whole job so that an error on any rank aborts every rank with a
// message (principle 8) instead of leaving the others waiting.
#pragma once
#include <functional>
#include <memory>
#include <string_view>
#include <thread>

#include "comm/communicator.h"
#include "comm/watchdog.h"

namespace parallm::comm {

class MpiRuntime {
 public:
  // Initialises MPI (once per process; works without mpirun as a singleton).
  MpiRuntime();
  // Finalises MPI. If an exception is unwinding past a multi-rank runtime,
  // aborts the job instead: the other ranks may be waiting in a collective.
  ~MpiRuntime();
  MpiRuntime(const MpiRuntime&) = delete;
  MpiRuntime& operator=(const MpiRuntime&) = delete;

  int world_rank() const { return rank_; }
  int world_size() const { return size_; }
  bool thread_multiple() const { return thread_multiple_; }

  // A new communicator over all ranks (a duplicate of MPI_COMM_WORLD) named
  // "world". Collective. Must be destroyed before the runtime.
  std::unique_ptr<Communicator> world(CommOptions opts = {});

  // Prints "parallm: rank R of N: <message>" and ends every rank of the job
  // (MPI_Abort). Safe from any thread.
  [[noreturn]] void abort(std::string_view message, int code = 1) const;

  Watchdog& watchdog() { return *watchdog_; }

 private:
  int rank_ = 0;
  int size_ = 1;
  bool thread_multiple_ = false;
  std::thread::id init_thread_;
  std::unique_ptr<Watchdog> watchdog_;
};

// Runs body with a fresh runtime. An exception escaping body on a multi-rank
// job prints "parallm: rank R of N: error: ..." and aborts the whole job
// (exit code 1); on a single rank it is rethrown after MPI is finalised.
int run_mpi_job(const std::function<int(MpiRuntime&)>& body);

}  // namespace parallm::comm
