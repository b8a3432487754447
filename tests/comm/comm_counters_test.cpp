// The Communicator's own accounting, without MPI: a fake backend (rank 1 of
// a group of 4 that moves nothing) shows the bytes and op count each
// collective adds to its kind, that snapshots subtract, and that blocked
// time covers blocking calls
// and Work::wait but not the compute between start and wait, that time in
// Work::test is poll time, and that a noted peer wait is kept per kind.
#include "comm/communicator.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace parallm::comm {
namespace {

using std::chrono::milliseconds;

// Completes once `done` is set (by the test, from another thread).
class GateOp : public PendingOp {
 public:
  GateOp(std::shared_ptr<std::atomic<bool>> done, milliseconds poll_delay)
      : done_(std::move(done)), poll_delay_(poll_delay) {}
  bool poll() override {
    std::this_thread::sleep_for(poll_delay_);  // bytes moving inside the poll
    return done_->load();
  }
  std::string describe() const override { return "fake op"; }
  milliseconds default_timeout() const override { return milliseconds(5000); }

 private:
  std::shared_ptr<std::atomic<bool>> done_;
  milliseconds poll_delay_;
};

class FakeCommunicator final : public Communicator {
 public:
  FakeCommunicator(std::string name, int rank, int size)
      : name_(std::move(name)), rank_(rank), size_(size) {}
  const std::string& name() const override { return name_; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const CommOptions& options() const override { return opts_; }
  uint64_t collectives_issued() const override { return 0; }
  std::unique_ptr<Communicator> split(int, int, std::string) override { return nullptr; }
  std::unique_ptr<Communicator> subgroup(std::span<const int>, std::string) override {
    return nullptr;
  }
  milliseconds run_delay{0};                // each blocking call takes this long
  std::shared_ptr<std::atomic<bool>> gate;  // async ops wait on it (null: complete at once)
  milliseconds poll_delay{0};               // each poll of an async op takes this long

 protected:
  void do_run(const OpSpec&) override { std::this_thread::sleep_for(run_delay); }
  std::unique_ptr<PendingOp> do_start(const OpSpec&) override {
    if (gate == nullptr) return nullptr;
    return std::make_unique<GateOp>(gate, poll_delay);
  }

 private:
  std::string name_;
  int rank_, size_;
  CommOptions opts_;
};

constexpr int64_t kF32 = 4, kF64 = 8;

TEST(CommCounters, BytesAndOpsPerKindForEveryOp) {
  FakeCommunicator c("tp[1]", /*rank=*/1, /*size=*/4);
  const size_t n = 6;  // elements per rank (per block for the blocked kinds)
  std::vector<float> a(4 * n), b(4 * n);
  std::vector<double> d(4 * n);
  c.all_reduce(a.data(), b.data(), n, DType::F32, ReduceOp::Sum);
  c.all_reduce(d.data(), n, DType::F64, ReduceOp::Max);
  c.all_gather(a.data(), b.data(), n, DType::F32);
  c.reduce_scatter(a.data(), b.data(), n, DType::F32, ReduceOp::Sum);
  c.broadcast(a.data(), n, DType::F32, /*root=*/1);  // this rank is the root
  c.broadcast(a.data(), n, DType::F32, /*root=*/0);  // receives only
  c.reduce(a.data(), b.data(), n, DType::F32, ReduceOp::Sum, 0);
  c.gather(a.data(), b.data(), n, DType::F32, 0);
  c.scatter(a.data(), b.data(), n, DType::F32, 1);  // root: hands all 4 blocks
  c.scatter(a.data(), b.data(), n, DType::F32, 0);
  c.all_to_all(a.data(), b.data(), n, DType::F32);
  const std::vector<size_t> sc = {1, 2, 3, 4}, rc = {4, 3, 2, 1};
  c.all_to_all_v(a.data(), sc, b.data(), rc, DType::F32);
  c.send(a.data(), n, DType::F32, 0);
  c.recv(b.data(), n, DType::F32, 2);
  c.barrier();

  const CommCounters k = c.counters();
  auto expect = [&](OpKind kind, int64_t ops, int64_t bytes) {
    EXPECT_EQ(k.of(kind).ops, ops) << op_kind_name(kind);
    EXPECT_EQ(k.of(kind).bytes, bytes) << op_kind_name(kind);
  };
  expect(OpKind::AllReduce, 2, n * kF32 + n * kF64);  // the buffer
  expect(OpKind::AllGather, 1, n * kF32);             // this rank's block
  expect(OpKind::ReduceScatter, 1, 4 * n * kF32);     // the whole input
  expect(OpKind::Broadcast, 2, n * kF32);             // the root's buffer only
  expect(OpKind::Reduce, 1, n * kF32);                // every rank's buffer
  expect(OpKind::Gather, 1, n * kF32);
  expect(OpKind::Scatter, 2, 4 * n * kF32);  // the root's whole send buffer
  expect(OpKind::AllToAll, 1, 4 * n * kF32);
  expect(OpKind::AllToAllV, 1, (1 + 2 + 3 + 4) * kF32);
  expect(OpKind::Send, 1, n * kF32);
  expect(OpKind::Recv, 1, 0);
  expect(OpKind::Barrier, 1, 0);
  EXPECT_EQ(k.total().ops, 15);
}

TEST(CommCounters, SnapshotsSubtract) {
  FakeCommunicator c("dp", 0, 2);
  std::vector<float> a(16);
  c.all_reduce(a.data(), 8, DType::F32, ReduceOp::Sum);
  const CommCounters start = c.counters();
  c.all_reduce(a.data(), 3, DType::F32, ReduceOp::Sum);
  (void)c.all_gather_async(a.data(), a.data() + 4, 4, DType::F32);  // completes at once
  const CommCounters d = c.counters() - start;
  EXPECT_EQ(d.of(OpKind::AllReduce).ops, 1);
  EXPECT_EQ(d.of(OpKind::AllReduce).bytes, 3 * kF32);
  EXPECT_EQ(d.of(OpKind::AllGather).bytes, 4 * kF32);
  EXPECT_EQ(d.total().ops, 2);
}

TEST(CommCounters, BlockingCallsAreBlockedTime) {
  FakeCommunicator c("pp[0]", 0, 2);
  c.run_delay = milliseconds(30);
  std::vector<float> a(4);
  c.send(a.data(), 4, DType::F32, 1);
  EXPECT_GE(c.counters().of(OpKind::Send).blocked_ms(), 30.0);
  EXPECT_EQ(c.counters().of(OpKind::Recv).blocked_ns, 0);
}

TEST(CommCounters, WorkWaitIsBlockedTimeAndOverlapIsNot) {
  FakeCommunicator c("dp[0]", 0, 2);
  c.gate = std::make_shared<std::atomic<bool>>(false);
  std::vector<float> a(4);
  Work w = c.all_reduce_async(a.data(), a.data(), 4, DType::F32, ReduceOp::Sum);
  // "Compute" overlapping the op: not blocked, and test() does not block.
  std::this_thread::sleep_for(milliseconds(150));
  EXPECT_FALSE(w.test());
  EXPECT_LT(c.counters().of(OpKind::AllReduce).blocked_ms(), 100.0);
  // The op completes 40 ms into the wait: that wait is exposed.
  std::thread opener([gate = c.gate] {
    std::this_thread::sleep_for(milliseconds(40));
    *gate = true;
  });
  w.wait();
  opener.join();
  const OpTally t = c.counters().of(OpKind::AllReduce);
  EXPECT_EQ(t.ops, 1);
  EXPECT_EQ(t.bytes, 4 * kF32);
  EXPECT_GE(t.blocked_ms(), 30.0);   // (the opener may start before the wait)
  EXPECT_LT(t.blocked_ms(), 150.0);  // the overlapped 150 ms are not in it
}

TEST(CommCounters, AWorkDroppedPendingCountsItsWait) {
  FakeCommunicator c("tp[0]", 0, 2);
  c.gate = std::make_shared<std::atomic<bool>>(false);
  std::vector<float> a(8);
  std::thread opener([gate = c.gate] {
    std::this_thread::sleep_for(milliseconds(30));
    *gate = true;
  });
  { Work w = c.reduce_scatter_async(a.data(), a.data() + 4, 2, DType::F32, ReduceOp::Sum); }
  opener.join();
  EXPECT_GE(c.counters().of(OpKind::ReduceScatter).blocked_ms(), 20.0);
}

TEST(CommCounters, TestIsPollTimeAndNotedPeerWaitIsKept) {
  FakeCommunicator c("cp[0]", 0, 2);
  c.gate = std::make_shared<std::atomic<bool>>(false);
  c.poll_delay = milliseconds(10);
  std::vector<float> a(4);
  const CommCounters start = c.counters();
  Work w = c.recv_async(a.data(), 4, DType::F32, 1);
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(w.test());
  *c.gate = true;
  EXPECT_TRUE(w.test());
  c.note_peer_wait(OpKind::Recv, 7'000'000);
  const OpTally t = (c.counters() - start).of(OpKind::Recv);
  EXPECT_GE(t.poll_ms(), 40.0);  // four polls of 10 ms
  EXPECT_LT(t.blocked_ms(), 5.0);  // test() never counts as blocked
  EXPECT_EQ(t.peer_wait_ns, 7'000'000);
  EXPECT_EQ(c.counters().of(OpKind::Send).poll_ns, 0);
}

}  // namespace
}  // namespace parallm::comm
