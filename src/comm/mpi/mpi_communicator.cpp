#include "comm/mpi/mpi_communicator.h"

#include <fmt/format.h>

#include <algorithm>
#include <exception>

#include "base/error.h"
#include "comm/mpi/mpi_check.h"
#include "comm/mpi/mpi_pending.h"
#include "comm/mpi/mpi_plan.h"
#include "comm/mpi/mpi_runtime.h"
#include "comm/mpi/mpi_types.h"
#include "comm/mpi/mpi_worker.h"

namespace parallm::comm {

MpiCommunicator::MpiCommunicator(MpiRuntime& rt, MPI_Comm comm, std::string name, CommOptions opts)
    : rt_(rt), comm_(comm), name_(std::move(name)), opts_(opts) {
  MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
  label_ = std::make_shared<const std::string>(label());
  if (opts_.check_collectives) {  // here, while no worker can be using comm_
    mpi_check(MPI_Comm_dup(comm_, &check_comm_), "MPI_Comm_dup", *label_);
    MPI_Comm_set_errhandler(check_comm_, MPI_ERRORS_RETURN);
  }
  slot_ = rt_.watchdog().add_slot(*label_);
}

MpiCommunicator::~MpiCommunicator() {
  // An error is unwinding towards run_mpi_job, which prints it and aborts
  // the job: waiting out the timeout for collectives a dead or stopped peer
  // will never join would only delay that end and hide the error behind
  // this one. The group is left to the abort (work.cpp does the same).
  if (worker_ != nullptr && !worker_->idle() && std::uncaught_exceptions() > 0) {
    (void)worker_.release();
    return;
  }
  if (worker_ != nullptr) {
    drain("destroying the group");
    worker_.reset();
  }
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  if (check_comm_ != MPI_COMM_NULL) MPI_Comm_free(&check_comm_);
  MPI_Comm_free(&comm_);
}

void MpiCommunicator::drain(const char* why) {
  if (worker_ == nullptr || worker_->idle()) return;
  const auto deadline = std::chrono::steady_clock::now() + opts_.timeout;
  if (!worker_->drain_until(deadline))
    rt_.abort(fmt::format("{}: queued collectives did not complete within {} while {}", *label_,
                          format_duration(opts_.timeout), why));
}

std::unique_ptr<Communicator> MpiCommunicator::split(int color, int key, std::string name) {
  drain("splitting it");
  MPI_Comm sub = MPI_COMM_NULL;
  const std::string ctx = fmt::format("split into '{}' on {}", name, *label_);
  {
    WatchGuard guard(*slot_, "split", coll_seq_, -1, opts_.timeout);
    mpi_check(MPI_Comm_split(comm_, color < 0 ? MPI_UNDEFINED : color, key, &sub), "MPI_Comm_split",
              ctx);
  }
  if (sub == MPI_COMM_NULL) return nullptr;
  return std::make_unique<MpiCommunicator>(rt_, sub, std::move(name), opts_);
}

std::unique_ptr<Communicator> MpiCommunicator::subgroup(std::span<const int> ranks,
                                                        std::string name) {
  const std::string ctx = fmt::format("subgroup '{}' on {}", name, *label_);
  PX_CHECK(std::find(ranks.begin(), ranks.end(), rank_) != ranks.end(),
           "{}: this rank is not one of the listed ranks [{}]", ctx, fmt::join(ranks, ","));
  drain("creating a subgroup");
  MPI_Group all = MPI_GROUP_NULL, part = MPI_GROUP_NULL;
  MPI_Comm sub = MPI_COMM_NULL;
  mpi_check(MPI_Comm_group(comm_, &all), "MPI_Comm_group", ctx);
  int rc = MPI_Group_incl(all, static_cast<int>(ranks.size()), ranks.data(), &part);
  if (rc == MPI_SUCCESS) {
    WatchGuard guard(*slot_, "subgroup", coll_seq_, -1, opts_.timeout);
    rc = MPI_Comm_create_group(comm_, part, /*tag=*/0, &sub);
  }
  MPI_Group_free(&all);
  if (part != MPI_GROUP_NULL) MPI_Group_free(&part);
  mpi_check(rc, "MPI_Comm_create_group", ctx);
  return std::make_unique<MpiCommunicator>(rt_, sub, std::move(name), opts_);
}

OpLabel MpiCommunicator::next_label(const OpSpec& s) {
  OpLabel l;
  l.kind = s.kind;
  l.group = label_;
  if (is_collective(s.kind)) {
    l.seq = ++coll_seq_;
  } else {
    l.seq = ++p2p_seq_;
    l.peer = s.root;
    l.tag = s.tag;
  }
  return l;
}

void MpiCommunicator::check(const OpSpec& s, const OpLabel& l) {
  if (!opts_.check_collectives || !is_collective(s.kind)) return;
  check_collective(s, l, check_comm_, rank_, size_, opts_.timeout);
}

void MpiCommunicator::run_inline(const OpSpec& s, const OpLabel& l) {
  MpiPlan p = make_plan(s, comm_, rank_, size_, opts_.allocator, name_, &ring_scratch_);
  MPI_Status st;
  int rc;
  {
    WatchGuard guard(*slot_, op_kind_name(s.kind).data(), l.seq, l.peer, opts_.timeout);
    rc = invoke(p.call, nullptr, &st);
  }
  mpi_check(rc, mpi_call_name(s.kind, false), l.str());
  if (s.kind == OpKind::Recv) check_recv_count(st, p.call.type, p.expect_recv, l);
  p.finish.apply();
}

void MpiCommunicator::do_run(const OpSpec& s) {
  OpLabel l = next_label(s);
  check(s, l);
  if (!is_collective(s.kind) || worker_ == nullptr || worker_->idle()) return run_inline(s, l);
  // Collectives are queued behind this one: keep the order, and wait for it.
  MpiPlan p = make_plan(s, comm_, rank_, size_, opts_.allocator, name_, &ring_scratch_);
  auto task = std::make_shared<MpiTask>(std::move(p), std::move(l));
  worker_->enqueue(task);
  Work(std::make_unique<MpiTaskWork>(task, opts_.timeout)).wait();
}

std::unique_ptr<PendingOp> MpiCommunicator::do_start(const OpSpec& s) {
  OpLabel l = next_label(s);
  check(s, l);
  if (is_collective(s.kind) && !rt_.thread_multiple()) {  // no worker thread: run it now
    run_inline(s, l);
    return nullptr;
  }
  MpiPlan p = make_plan(s, comm_, rank_, size_, opts_.allocator, name_, &ring_scratch_);
  if (!is_collective(s.kind))
    return std::make_unique<MpiRequestWork>(std::move(p), std::move(l), opts_.timeout);
  if (worker_ == nullptr) worker_ = std::make_unique<MpiWorker>();
  auto task = std::make_shared<MpiTask>(std::move(p), std::move(l));
  worker_->enqueue(task);
  return std::make_unique<MpiTaskWork>(std::move(task), opts_.timeout);
}

}  // namespace parallm::comm
