#include "comm/test_device_staging.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "comm/op_spec.h"
#include "comm/work.h"
#include "tensor/test_device_memory.h"

namespace parallm::comm {

namespace {

// Every point-to-point operation on test device buffers carries this one
// tag (the largest the MPI backend lets a caller use; its ring reduction
// has 32766), so MPI matches them as NCCL would: per pair of ranks in issue
// order, whatever tag the caller gave. Host buffers keep their tags, as a
// GPU's host buffers go to MPI with theirs.
constexpr int kDeviceP2pTag = 32765;

// One operation's host side: the spec with its device buffers swapped for
// host ones, and what to copy back to the device when it completes.
class Staged {
 public:
  Staged(const OpSpec& s, int rank, int size) : spec_(s) {
    const size_t dt = dtype_size(s.dtype);
    const size_t recv_bytes = recv_elems(s, rank, size) * dt;
    const size_t send_bytes = send_elems(s, rank, size) * dt;
    if (s.recv != nullptr && recv_bytes != 0 && is_test_device_address(s.recv)) {
      recv_.resize(recv_bytes);  // its old bytes too: in-place operations read them
      std::memcpy(recv_.data(), test_device_host(s.recv), recv_bytes);
      device_recv_ = s.recv;
      spec_.recv = recv_.data();
    }
    if (s.send != nullptr && send_bytes != 0 && is_test_device_address(s.send)) {
      const auto* send = static_cast<const std::byte*>(s.send);
      const auto* recv = static_cast<const std::byte*>(device_recv_);
      if (device_recv_ != nullptr && send >= recv && send + send_bytes <= recv + recv_bytes) {
        spec_.send = recv_.data() + (send - recv);  // in place: the same host bytes
      } else {
        send_.resize(send_bytes);
        std::memcpy(send_.data(), test_device_host(s.send), send_bytes);
        spec_.send = send_.data();
      }
    }
    const bool p2p = s.kind == OpKind::Send || s.kind == OpKind::Recv;
    if (p2p && (!recv_.empty() || spec_.send != s.send)) spec_.tag = kDeviceP2pTag;
  }
  const OpSpec& spec() const { return spec_; }
  void finish() {
    if (device_recv_ != nullptr)
      std::memcpy(test_device_host(device_recv_), recv_.data(), recv_.size());
    device_recv_ = nullptr;
  }

 private:
  OpSpec spec_;
  std::vector<std::byte> send_, recv_;
  void* device_recv_ = nullptr;
};

// An async operation on host buffers; its received bytes go back to the
// device once it completes.
class StagedOp final : public PendingOp {
 public:
  StagedOp(std::unique_ptr<Staged> staged, Work work, std::string what,
           std::chrono::milliseconds timeout)
      : staged_(std::move(staged)),
        work_(std::move(work)),
        what_(std::move(what)),
        timeout_(timeout) {}
  bool poll() override {
    if (!work_.test()) return false;
    staged_->finish();
    return true;
  }
  bool wait_until(std::chrono::steady_clock::time_point deadline) override {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    try {
      work_.wait(std::max(left, std::chrono::milliseconds(0)));
    } catch (const Error&) {
      return false;  // still pending: the caller reports the timeout
    }
    staged_->finish();
    return true;
  }
  std::string describe() const override { return what_; }
  std::chrono::milliseconds default_timeout() const override { return timeout_; }

 private:
  std::unique_ptr<Staged> staged_;
  Work work_;
  std::string what_;
  std::chrono::milliseconds timeout_;
};

}  // namespace

TestDeviceStaging::TestDeviceStaging(std::unique_ptr<Communicator> inner)
    : owned_(std::move(inner)), inner_(owned_.get()) {
  PX_CHECK(inner_ != nullptr, "test device staging needs a communicator to stage for");
}

std::unique_ptr<Communicator> TestDeviceStaging::split(int color, int key, std::string name) {
  std::unique_ptr<Communicator> c = inner_->split(color, key, std::move(name));
  return c ? std::make_unique<TestDeviceStaging>(std::move(c)) : nullptr;
}

std::unique_ptr<Communicator> TestDeviceStaging::subgroup(std::span<const int> ranks,
                                                          std::string name) {
  std::unique_ptr<Communicator> c = inner_->subgroup(ranks, std::move(name));
  return c ? std::make_unique<TestDeviceStaging>(std::move(c)) : nullptr;
}

void TestDeviceStaging::do_run(const OpSpec& s) {
  Staged staged(s, rank(), size());
  inner_->run(staged.spec());
  staged.finish();
}

std::unique_ptr<PendingOp> TestDeviceStaging::do_start(const OpSpec& s) {
  auto staged = std::make_unique<Staged>(s, rank(), size());
  Work work = inner_->start(staged->spec());
  if (work.done()) {
    staged->finish();
    return nullptr;
  }
  return std::make_unique<StagedOp>(
      std::move(staged), std::move(work),
      fmt::format("{} on group '{}' (rank {} of {}, staged from the test device)",
                  op_kind_name(s.kind), name(), rank(), size()),
      options().timeout);
}

}  // namespace parallm::comm
