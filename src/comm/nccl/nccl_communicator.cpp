// The NCCL Communicator (nccl_communicator.h).
#include "comm/nccl/nccl_communicator.h"

#include <fmt/format.h>

#include <algorithm>

#include "base/error.h"
#include "comm/mpi/mpi_check.h"
#include "comm/mpi/mpi_communicator.h"
#include "comm/mpi/mpi_pending.h"
#include "comm/nccl/nccl_channel.h"
#include "comm/nccl/nccl_check.h"
#include "comm/nccl/nccl_ops.h"
#include "comm/nccl/nccl_work.h"
#include "comm/nccl/nccl_world.h"

namespace parallm::comm {
namespace {

// True when every buffer of s is host memory (NCCL reads device memory only).
bool host_buffers(const OpSpec& s) {
  const auto on_host = [](const void* p) {
    if (p == nullptr) return true;
    cudaPointerAttributes a{};
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
      cudaGetLastError();  // an unknown pointer is host memory; clear the sticky error
      return true;
    }
    return a.type != cudaMemoryTypeDevice && a.type != cudaMemoryTypeManaged;
  };
  return s.kind != OpKind::Barrier && on_host(s.send) && on_host(s.recv);
}

// A collective of one rank on host buffers: recv is send.
void run_alone(const OpSpec& s) {
  if (s.send == nullptr || s.recv == nullptr || s.send == s.recv) return;
  std::copy_n(static_cast<const char*>(s.send), recv_elems(s, 0, 1) * dtype_size(s.dtype),
              static_cast<char*>(s.recv));
}

}  // namespace

NcclCommunicator::NcclCommunicator(ncclComm_t comm, int device, std::string name, CommOptions opts,
                                   std::unique_ptr<Communicator> host)
    : host_(std::move(host)), device_(device), name_(std::move(name)), opts_(opts) {
  const std::string ctx = fmt::format("group '{}'", name_);
  nccl_check(ncclCommUserRank(comm, &rank_), "ncclCommUserRank", comm, ctx);
  nccl_check(ncclCommCount(comm, &size_), "ncclCommCount", comm, ctx);
  label_ = std::make_shared<const std::string>(label());
  if (host_ != nullptr)
    PX_CHECK(host_->rank() == rank_ && host_->size() == size_,
             "{}: its MPI host group is rank {} of {}, the NCCL group rank {} of {}", *label_,
             host_->rank(), host_->size(), rank_, size_);
  ch_ = std::make_shared<NcclChannel>(comm, device_, *label_);
}

NcclCommunicator::~NcclCommunicator() {
  // Deferred sends/recvs belong to Works, which launch them when waited on;
  // the channel lives on with them.
}

void NcclCommunicator::set_compute_stream(cudaStream_t s) { ch_->set_compute_stream(s); }
cudaStream_t NcclCommunicator::compute_stream() const { return ch_->compute_stream(); }
cudaStream_t NcclCommunicator::stream() const { return ch_->stream(); }
ncclComm_t NcclCommunicator::handle() const { return ch_->comm(); }

std::unique_ptr<Communicator> NcclCommunicator::split(int color, int key, std::string name) {
  ch_->flush();  // keep the issue order of this group's NCCL calls
  if (host_ != nullptr) {
    std::unique_ptr<Communicator> sub = host_->split(color, key, name);
    if (sub == nullptr) return nullptr;
    return same_stream(make_nccl_group(std::move(sub), device_, std::move(name), opts_));
  }
  ncclComm_t sub = nullptr;
  nccl_check(ncclCommSplit(ch_->comm(), color < 0 ? NCCL_SPLIT_NOCOLOR : color, key, &sub, nullptr),
             "ncclCommSplit", ch_->comm(), fmt::format("split into '{}' on {}", name, *label_));
  if (sub == nullptr) return nullptr;
  return same_stream(
      std::make_unique<NcclCommunicator>(sub, device_, std::move(name), opts_, nullptr));
}

std::unique_ptr<NcclCommunicator> NcclCommunicator::same_stream(
    std::unique_ptr<NcclCommunicator> c) const {
  c->set_compute_stream(compute_stream());
  return c;
}

std::unique_ptr<Communicator> NcclCommunicator::subgroup(std::span<const int> ranks,
                                                         std::string name) {
  const std::string ctx = fmt::format("subgroup '{}' on {}", name, *label_);
  PX_CHECK(std::find(ranks.begin(), ranks.end(), rank_) != ranks.end(),
           "{}: this rank is not one of the listed ranks [{}]", ctx, fmt::join(ranks, ","));
  ch_->flush();
  if (host_ != nullptr)
    return same_stream(
        make_nccl_group(host_->subgroup(ranks, name), device_, std::move(name), opts_));
  // One rank and no host: the subgroup is this rank alone.
  PX_CHECK(ranks.size() == 1, "{}: ranks [{}] are not distinct ranks of a one-rank group", ctx,
           fmt::join(ranks, ","));
  ncclComm_t sub = nullptr;
  nccl_check(ncclCommSplit(ch_->comm(), 0, 0, &sub, nullptr), "ncclCommSplit", ch_->comm(), ctx);
  return same_stream(
      std::make_unique<NcclCommunicator>(sub, device_, std::move(name), opts_, nullptr));
}

OpLabel NcclCommunicator::next_label(const OpSpec& s) {
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

void NcclCommunicator::check(const OpSpec& s, const OpLabel& l) {
  if (!opts_.check_collectives || !is_collective(s.kind)) return;
  auto* mpi = dynamic_cast<MpiCommunicator*>(host_.get());
  if (mpi == nullptr) return;  // one rank: nothing to compare with
  check_collective(s, l, mpi->handle(), rank_, size_, opts_.timeout);
}

std::unique_ptr<PendingOp> NcclCommunicator::do_start(const OpSpec& s) {
  if (host_buffers(s)) {  // at once, in issue order with the group's other calls
    do_run(s);
    return nullptr;
  }
  OpLabel l = next_label(s);
  const std::string what = l.str();
  if (!is_collective(s.kind)) {
    P2pCall c;
    c.is_send = s.kind == OpKind::Send;
    c.send = s.send;
    c.recv = s.recv;
    c.bytes = s.count * dtype_size(s.dtype);
    c.peer = s.root;
    std::shared_ptr<NcclDone> done = ch_->defer(c, what);
    return std::make_unique<NcclWork>(ch_, std::move(done), std::move(l), opts_.timeout);
  }
  check(s, l);
  ch_->begin(what);
  enqueue_collective(s, *ch_, rank_, size_, what);
  return std::make_unique<NcclWork>(ch_, ch_->record_done(), std::move(l), opts_.timeout);
}

void NcclCommunicator::do_run(const OpSpec& s) {
  if (host_buffers(s)) {
    ch_->flush();  // the NCCL calls issued before it go first
    if (host_ != nullptr) return host_->run(s);
    PX_CHECK(is_collective(s.kind), "{}: a send or receive of host memory in a one-rank group",
             *label_);
    return run_alone(s);
  }
  // Not through Work: a timed-out Work would wait again in its destructor.
  std::unique_ptr<PendingOp> op = do_start(s);
  if (op->wait_until(std::chrono::steady_clock::now() + opts_.timeout)) return;
  PX_FAIL(
      "{} did not complete within {}: a peer rank may have died, hung, or called a "
      "different collective (set check_collectives to compare calls); the NCCL communicator "
      "was aborted",
      op->describe(), format_duration(opts_.timeout));
}

}  // namespace parallm::comm
