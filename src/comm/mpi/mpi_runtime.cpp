#include "comm/mpi/mpi_runtime.h"

#include "comm/mpi/mpi_include.h"

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "base/error.h"
#include "comm/mpi/mpi_communicator.h"
#include "comm/mpi/mpi_types.h"

namespace parallm::comm {

MpiRuntime::MpiRuntime() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  PX_CHECK(!initialized && !finalized, "MPI is already {} in this process: create one MpiRuntime",
           finalized ? "finalised" : "initialised");
  int provided = 0;
  mpi_check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided), "MPI_Init_thread",
            "startup");
  thread_multiple_ = provided >= MPI_THREAD_MULTIPLE;
  init_thread_ = std::this_thread::get_id();
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  watchdog_ = std::make_unique<Watchdog>([this](const std::string& msg) { abort(msg); });
}

MpiRuntime::~MpiRuntime() {
  watchdog_.reset();
  if (std::uncaught_exceptions() > 0 && size_ > 1)
    abort("an error escaped while MPI was running; ending the job so no rank waits forever");
  MPI_Finalize();
}

std::unique_ptr<Communicator> MpiRuntime::world(CommOptions opts) {
  MPI_Comm dup = MPI_COMM_NULL;
  mpi_check(MPI_Comm_dup(MPI_COMM_WORLD, &dup), "MPI_Comm_dup", "creating the world group");
  return std::make_unique<MpiCommunicator>(*this, dup, "world", opts);
}

void MpiRuntime::abort(std::string_view message, int code) const {
  std::fprintf(stderr, "parallm: rank %d of %d: %.*s\n", rank_, size_,
               static_cast<int>(message.size()), message.data());
  std::fflush(stderr);
  // MPI_Abort from a second thread needs thread-multiple; otherwise a plain
  // non-zero exit makes mpirun end the other ranks.
  if (thread_multiple_ || std::this_thread::get_id() == init_thread_)
    MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

int run_mpi_job(const std::function<int(MpiRuntime&)>& body) {
  MpiRuntime rt;
  try {
    return body(rt);
  } catch (const std::exception& e) {
    if (rt.world_size() == 1) throw;
    const bool ours = dynamic_cast<const Error*>(&e) != nullptr;
    rt.abort(std::string(ours ? "error: " : "internal error: ") + e.what());
  }
}

}  // namespace parallm::comm
