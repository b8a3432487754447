// MpiCommunicator: the Communicator over one MPI communicator. Every
// collective is the plain blocking MPI call (Open MPI's tuned algorithms, no
// extra copies on native dtypes): inline for a blocking call when nothing is
// queued (bounded by the runtime's watchdog), else on the group's MpiWorker
// thread (async calls, and blocking calls behind them, bounded by Work::wait).
// Point-to-point async uses MPI_Isend/Irecv. Groups come from MPI_Comm_split
// and MPI_Comm_create_group. Owns its MPI_Comms and frees them at the end.
#pragma once
#include "comm/mpi/mpi_include.h"

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "comm/watchdog.h"

namespace parallm::comm {

class MpiRuntime;
class MpiWorker;
struct OpLabel;

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator(MpiRuntime& rt, MPI_Comm comm, std::string name, CommOptions opts);
  ~MpiCommunicator() override;

  const std::string& name() const override { return name_; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const CommOptions& options() const override { return opts_; }
  uint64_t collectives_issued() const override { return coll_seq_; }
  std::unique_ptr<Communicator> split(int color, int key, std::string name) override;
  std::unique_ptr<Communicator> subgroup(std::span<const int> ranks, std::string name) override;

  // The underlying MPI communicator, for MPI-aware tools (the raw-MPI peer of
  // the benchmark); parallel code never needs it.
  MPI_Comm handle() const { return comm_; }

 protected:
  void do_run(const OpSpec& s) override;
  std::unique_ptr<PendingOp> do_start(const OpSpec& s) override;

 private:
  OpLabel next_label(const OpSpec& s);
  void check(const OpSpec& s, const OpLabel& l);
  void run_inline(const OpSpec& s, const OpLabel& l);
  // Waits (up to the timeout) for queued collectives before calls that use
  // comm_ from this thread: MPI needs one order of collectives per comm.
  void drain(const char* why);
  MpiRuntime& rt_;
  MPI_Comm comm_;
  MPI_Comm check_comm_ = MPI_COMM_NULL;  // collective checks, on the caller's thread
  // The ring reduce-scatter's blocks in flight (ring_reduce_scatter.h), kept
  // between calls: a fresh buffer would fault in every page each call. One
  // collective runs at a time per communicator (queued or inline), and this
  // outlives the worker that may use it (declared before it).
  std::vector<std::byte> ring_scratch_;
  std::unique_ptr<MpiWorker> worker_;  // started by the first async collective
  std::string name_;
  CommOptions opts_;
  int rank_ = 0;
  int size_ = 1;
  uint64_t coll_seq_ = 0;  // collectives issued
  uint64_t p2p_seq_ = 0;   // sends and recvs issued
  std::shared_ptr<const std::string> label_;
  std::shared_ptr<WatchSlot> slot_;
};

}  // namespace parallm::comm
