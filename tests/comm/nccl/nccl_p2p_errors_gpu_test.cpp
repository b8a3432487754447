// Send/recv to self on a one-rank NCCL group (deferred into one NCCL group,
// so a blocking call after an async one, and the ring order recv-then-send,
// complete), FIFO matching in place of tags, errors on bad specs naming the
// problem, and the timeout: an operation stuck behind the compute stream
// aborts the communicator and throws, and later calls say it was aborted.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "base/error.h"
#include "nccl_test_util.h"

namespace parallm::testing {
namespace {

using comm::ReduceOp;
using Bytes = DeviceBuffer<uint8_t>;

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST_F(NcclSingleTest, SendAndRecvToSelfForEveryDtype) {
  for (DType t : kAllDTypes) {
    SCOPED_TRACE(std::string(dtype_name(t)));
    const auto x = test_values(t, 517, 6);
    Bytes src(x), dst(x.size()), dst2(x.size());
    comm::Work s = comm_->send_async(src.get(), 517, t, 0);
    comm_->recv(dst.get(), 517, t, 0);  // launches both as one group
    s.wait();
    EXPECT_EQ(dst.to_host(), x);
    // Ring order: the recv is posted before the send.
    comm::Work r = comm_->recv_async(dst2.get(), 517, t, 0);
    comm::Work s2 = comm_->send_async(src.get(), 517, t, 0);
    r.wait();
    s2.wait();
    EXPECT_EQ(dst2.to_host(), x);
  }
}

TEST_F(NcclSingleTest, SendsAndRecvsMatchInIssueOrder) {
  const auto a = test_values(DType::I32, 64, 1), b = test_values(DType::I32, 64, 9);
  Bytes sa(a), sb(b), ra(a.size()), rb(b.size());
  comm::Work w1 = comm_->send_async(sa.get(), 64, DType::I32, 0, /*tag=*/1);
  comm::Work w2 = comm_->send_async(sb.get(), 64, DType::I32, 0, /*tag=*/2);
  comm::Work w3 = comm_->recv_async(ra.get(), 64, DType::I32, 0, /*tag=*/1);
  comm::Work w4 = comm_->recv_async(rb.get(), 64, DType::I32, 0, /*tag=*/2);
  w4.wait();
  EXPECT_TRUE(w1.test());  // one group: all four completed together
  w2.wait();
  w3.wait();
  EXPECT_EQ(ra.to_host(), a);
  EXPECT_EQ(rb.to_host(), b);
  // A collective after deferred sends/recvs launches them first.
  Bytes rc(a.size());
  comm::Work w5 = comm_->send_async(sa.get(), 64, DType::I32, 0);
  comm::Work w6 = comm_->recv_async(rc.get(), 64, DType::I32, 0);
  comm_->barrier();
  w5.wait();
  w6.wait();
  EXPECT_EQ(rc.to_host(), a);
}

TEST_F(NcclSingleTest, BadSpecsFailNamingTheProblem) {
  Bytes a(64), b(64);
  EXPECT_NE(error_of([&] {
              comm_->broadcast(a.get(), 4, DType::F32, 1);
            }).find("root 1 is outside the group"),
            std::string::npos);
  EXPECT_NE(
      error_of([&] { comm_->send(a.get(), 4, DType::F32, 2); }).find("peer 2 is outside the group"),
      std::string::npos);
  EXPECT_NE(error_of([&] {
              comm_->all_reduce(a.get(), b.get(), 4, DType::U8, ReduceOp::Sum);
            }).find("dtype U8 cannot be reduced"),
            std::string::npos);
  const std::vector<size_t> two = {1, 1};
  EXPECT_NE(error_of([&] {
              comm_->all_to_all_v(a.get(), two, b.get(), two, DType::F32);
            }).find("one per rank"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              comm_->all_reduce(a.get(), a.get() + 4, 8, DType::F32, ReduceOp::Sum);
            }).find("overlap"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              comm_->all_reduce(nullptr, b.get(), 4, DType::F32, ReduceOp::Sum);
            }).find("send buffer is null"),
            std::string::npos);
  const std::vector<int> other = {1};
  EXPECT_NE(error_of([&] { (void)comm_->subgroup(other, "x"); }).find("not one of the listed"),
            std::string::npos);
  // The group still works after refused calls.
  comm_->barrier();
}

TEST_F(NcclSingleTest, TimeoutAbortsTheCommunicatorAndLaterCallsSaySo) {
  comm::CommOptions opts;
  opts.timeout = std::chrono::milliseconds(300);
  auto c = comm::make_nccl_single(0, opts, "slow");
  c->barrier();  // any lazy NCCL setup happens here, not in the call that is timed
  cudaStream_t s = nullptr;
  PX_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  // The compute stream is held by a host function until a second thread
  // releases it, so the all_reduce queued behind it cannot start in time.
  std::atomic<bool> release{false};
  auto hold = [](void* flag) {
    while (!static_cast<std::atomic<bool>*>(flag)->load()) std::this_thread::yield();
  };
  PX_CUDA(cudaLaunchHostFunc(s, hold, &release));
  std::thread releaser([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    release = true;
  });
  c->set_compute_stream(s);
  Bytes a(test_values(DType::F32, 16, 0)), b(64);
  const std::string err =
      error_of([&] { c->all_reduce(a.get(), b.get(), 16, DType::F32, ReduceOp::Sum); });
  EXPECT_NE(err.find("all_reduce #2 on group 'slow' (rank 0 of 1) did not complete within 300 ms"),
            std::string::npos)
      << err;
  releaser.join();
  PX_CUDA(cudaStreamSynchronize(s));
  const std::string later = error_of([&] { c->barrier(); });
  EXPECT_NE(later.find("was aborted"), std::string::npos) << later;
  c.reset();
  PX_CUDA(cudaStreamDestroy(s));
}

}  // namespace
}  // namespace parallm::testing
