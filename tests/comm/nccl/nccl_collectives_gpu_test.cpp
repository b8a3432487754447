// Every collective of a one-rank NCCL group on device buffers, for every
// dtype, out of place and in place. With one rank each collective is a copy
// of the input (all_reduce, reduce and reduce_scatter of one rank's data, for
// every reduce op; all_gather, gather, scatter, all_to_all(_v), broadcast),
// so results are compared bit for bit with the input.
#include <gtest/gtest.h>

#include "nccl_test_util.h"

namespace parallm::testing {
namespace {

using comm::ReduceOp;
using Bytes = DeviceBuffer<uint8_t>;

constexpr size_t kN = 1037;  // odd, not a multiple of any vector width

const std::vector<ReduceOp> kOps = {ReduceOp::Sum, ReduceOp::Avg, ReduceOp::Max, ReduceOp::Min};

TEST_F(NcclSingleTest, GroupHasOneRank) {
  EXPECT_EQ(comm_->rank(), 0);
  EXPECT_EQ(comm_->size(), 1);
  EXPECT_EQ(comm_->name(), "world");
  EXPECT_EQ(comm_->device(), 0);
  EXPECT_NE(comm_->stream(), nullptr);
}

// Host buffers (the trainer's losses and norms) are not NCCL's: a one-rank
// group without an MPI group beside it copies them, and a split group keeps
// the compute stream its parent waits on.
TEST_F(NcclSingleTest, HostBuffersAndSplitGroupsStream) {
  const std::vector<double> in = {1.5, -2.0, 3.25};
  std::vector<double> out(in.size(), 0.0);
  comm_->all_reduce(in.data(), out.data(), in.size(), DType::F64, ReduceOp::Sum);
  EXPECT_EQ(out, in);
  double x = 4.0;
  comm_->all_reduce(&x, 1, DType::F64, ReduceOp::Sum);  // in place: unchanged
  EXPECT_EQ(x, 4.0);
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
  comm_->set_compute_stream(s);
  std::unique_ptr<comm::Communicator> sub = comm_->split(0, 0, "sub");
  auto* nccl = dynamic_cast<comm::NcclCommunicator*>(sub.get());
  ASSERT_NE(nccl, nullptr);
  EXPECT_EQ(nccl->compute_stream(), s);
  sub.reset();
  comm_->set_compute_stream(nullptr);
  cudaStreamDestroy(s);
}

TEST_F(NcclSingleTest, AllReduceReduceAndReduceScatterCopyForEveryOpAndDtype) {
  for (DType t : kReducible) {
    for (ReduceOp op : kOps) {
      SCOPED_TRACE(std::string(dtype_name(t)) + " " + std::string(comm::reduce_op_name(op)));
      const auto in = test_values(t, kN, 3);
      Bytes send(in), recv(in.size());
      comm_->all_reduce(send.get(), recv.get(), kN, t, op);
      EXPECT_EQ(recv.to_host(), in);
      Bytes buf(in);
      comm_->all_reduce(buf.get(), kN, t, op);  // in place
      EXPECT_EQ(buf.to_host(), in);

      Bytes rrecv(in.size());
      comm_->reduce(send.get(), rrecv.get(), kN, t, op, 0);
      EXPECT_EQ(rrecv.to_host(), in);
      Bytes rbuf(in);
      comm_->reduce(rbuf.get(), rbuf.get(), kN, t, op, 0);
      EXPECT_EQ(rbuf.to_host(), in);

      Bytes rs(in.size());
      comm_->reduce_scatter(send.get(), rs.get(), kN, t, op);
      EXPECT_EQ(rs.to_host(), in);
      Bytes rsbuf(in);
      comm_->reduce_scatter(rsbuf.get(), rsbuf.get(), kN, t, op);  // recv == send + 0*count
      EXPECT_EQ(rsbuf.to_host(), in);
    }
  }
}

TEST_F(NcclSingleTest, DataMovementCopiesForEveryDtype) {
  for (DType t : kAllDTypes) {
    SCOPED_TRACE(std::string(dtype_name(t)));
    const auto in = test_values(t, kN, 5);
    Bytes send(in);
    {
      Bytes recv(in.size());
      comm_->broadcast(send.get(), recv.get(), kN, t, 0);
      EXPECT_EQ(recv.to_host(), in);
      Bytes buf(in);
      comm_->broadcast(buf.get(), kN, t, 0);
      EXPECT_EQ(buf.to_host(), in);
    }
    {
      Bytes recv(in.size());
      comm_->all_gather(send.get(), recv.get(), kN, t);
      EXPECT_EQ(recv.to_host(), in);
      Bytes buf(in);
      comm_->all_gather(buf.get(), buf.get(), kN, t);  // send == recv + 0*count
      EXPECT_EQ(buf.to_host(), in);
    }
    {
      Bytes recv(in.size());
      comm_->gather(send.get(), recv.get(), kN, t, 0);
      EXPECT_EQ(recv.to_host(), in);
      Bytes buf(in);
      comm_->gather(buf.get(), buf.get(), kN, t, 0);
      EXPECT_EQ(buf.to_host(), in);
    }
    {
      Bytes recv(in.size());
      comm_->scatter(send.get(), recv.get(), kN, t, 0);
      EXPECT_EQ(recv.to_host(), in);
      Bytes buf(in);
      comm_->scatter(buf.get(), buf.get(), kN, t, 0);
      EXPECT_EQ(buf.to_host(), in);
    }
    {
      Bytes recv(in.size());
      comm_->all_to_all(send.get(), recv.get(), kN, t);
      EXPECT_EQ(recv.to_host(), in);
      Bytes buf(in);
      comm_->all_to_all(buf.get(), buf.get(), kN, t);
      EXPECT_EQ(buf.to_host(), in);
    }
    {
      const std::vector<size_t> counts = {kN};
      Bytes recv(in.size());
      comm_->all_to_all_v(send.get(), counts, recv.get(), counts, t);
      EXPECT_EQ(recv.to_host(), in);
      Bytes buf(in);
      comm_->all_to_all_v(buf.get(), counts, buf.get(), counts, t);
      EXPECT_EQ(buf.to_host(), in);
    }
    EXPECT_EQ(send.to_host(), in);  // inputs untouched
  }
}

TEST_F(NcclSingleTest, ZeroCountsAndBarrierComplete) {
  Bytes a(std::vector<uint8_t>(16, 7));
  comm_->all_reduce(a.get(), 0, DType::F32, ReduceOp::Sum);
  comm_->all_gather(a.get(), a.get(), 0, DType::F32);
  comm_->all_to_all(a.get(), a.get(), 0, DType::F32);
  const std::vector<size_t> zero = {0};
  comm_->all_to_all_v(a.get(), zero, a.get(), zero, DType::F32);
  comm_->barrier();
  comm_->barrier_async().wait();
  EXPECT_EQ(a.to_host(), std::vector<uint8_t>(16, 7));
  EXPECT_EQ(comm_->collectives_issued(), 6u);
}

TEST_F(NcclSingleTest, AsyncWorksCompleteInAnyWaitOrder) {
  const auto x = test_values(DType::F32, kN, 1), y = test_values(DType::BF16, kN, 2);
  Bytes sx(x), rx(x.size()), sy(y), ry(y.size());
  comm::Work wx = comm_->all_reduce_async(sx.get(), rx.get(), kN, DType::F32, ReduceOp::Sum);
  comm::Work wy = comm_->all_gather_async(sy.get(), ry.get(), kN, DType::BF16);
  comm::Work wb = comm_->barrier_async();
  EXPECT_FALSE(wy.done());
  wy.wait();
  EXPECT_TRUE(wy.done());
  while (!wx.test()) {
  }
  wb.wait(std::chrono::seconds(30));
  EXPECT_EQ(rx.to_host(), x);
  EXPECT_EQ(ry.to_host(), y);
  const comm::CommCounters c = comm_->counters();
  EXPECT_EQ(c.of(comm::OpKind::AllReduce).ops, 1);
  EXPECT_EQ(c.of(comm::OpKind::AllGather).bytes, static_cast<int64_t>(y.size()));
}

TEST_F(NcclSingleTest, OperationsWaitForTheComputeStream) {
  // A large write queued on the compute stream must land before the
  // broadcast reads it, although the communication stream is another one.
  const size_t n = size_t{64} << 20;
  Bytes in(n), out(n);
  cudaStream_t s = nullptr;
  PX_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  comm_->set_compute_stream(s);
  EXPECT_EQ(comm_->compute_stream(), s);
  PX_CUDA(cudaMemsetAsync(in.get(), 0x3c, n, s));
  PX_CUDA(cudaMemsetAsync(in.get(), 0x5a, n, s));
  comm_->broadcast(in.get(), out.get(), n, DType::U8, 0);
  const auto h = out.to_host();
  size_t wrong = 0;
  for (uint8_t b : h) wrong += b != 0x5a;
  EXPECT_EQ(wrong, 0u);
  comm_->set_compute_stream(nullptr);
  PX_CUDA(cudaStreamDestroy(s));
}

TEST_F(NcclSingleTest, SplitAndSubgroupGiveWorkingOneRankGroups) {
  EXPECT_EQ(comm_->split(-1, 0, "none"), nullptr);
  std::unique_ptr<comm::Communicator> sub = comm_->split(3, 0, "tp[0]");
  ASSERT_NE(sub, nullptr);
  EXPECT_EQ(sub->size(), 1);
  EXPECT_EQ(sub->name(), "tp[0]");
  const std::vector<int> ranks = {0};
  std::unique_ptr<comm::Communicator> part = comm_->subgroup(ranks, "part");
  ASSERT_NE(part, nullptr);
  const auto x = test_values(DType::I64, 33, 4);
  Bytes a(x), b(x.size()), c(x.size());
  sub->all_reduce(a.get(), b.get(), 33, DType::I64, ReduceOp::Max);
  part->all_gather(a.get(), c.get(), 33, DType::I64);
  EXPECT_EQ(b.to_host(), x);
  EXPECT_EQ(c.to_host(), x);
}

}  // namespace
}  // namespace parallm::testing
