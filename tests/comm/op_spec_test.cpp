// OpSpec semantics without MPI: NCCL's in-place pointer rules, buffer sizes,
// validation messages, names, and the fp32 staging used for bf16/f16.
#include "comm/op_spec.h"

#include <gtest/gtest.h>

#include "base/error.h"
#include "comm/staging.h"
#include "tensor/allocator.h"
#include "tensor/half.h"

namespace parallm::comm {
namespace {

OpSpec spec(OpKind k, const void* s, void* r, size_t n, int root = 0) {
  OpSpec o;
  o.kind = k;
  o.send = s;
  o.recv = r;
  o.count = n;
  o.root = root;
  return o;
}

TEST(OpSpec, InPlaceFollowsNcclPointerRules) {
  float buf[12];
  // all_gather: send is this rank's block of recv.
  EXPECT_TRUE(is_in_place(spec(OpKind::AllGather, buf + 6, buf, 3), 2, 4));
  EXPECT_FALSE(is_in_place(spec(OpKind::AllGather, buf, buf, 3), 2, 4));
  // reduce_scatter: recv is this rank's block of send.
  EXPECT_TRUE(is_in_place(spec(OpKind::ReduceScatter, buf, buf + 3, 3), 1, 4));
  // gather/scatter: only the root can be in place.
  EXPECT_TRUE(is_in_place(spec(OpKind::Gather, buf + 3, buf, 3, 1), 1, 4));
  EXPECT_FALSE(is_in_place(spec(OpKind::Gather, buf + 3, buf, 3, 0), 1, 4));
  EXPECT_TRUE(is_in_place(spec(OpKind::Scatter, buf, buf + 9, 3, 3), 3, 4));
  EXPECT_TRUE(is_in_place(spec(OpKind::AllReduce, buf, buf, 3), 0, 4));
}

TEST(OpSpec, BufferSizesPerRank) {
  OpSpec g = spec(OpKind::Gather, nullptr, nullptr, 5, 1);
  EXPECT_EQ(send_elems(g, 0, 3), 5u);
  EXPECT_EQ(recv_elems(g, 0, 3), 0u);
  EXPECT_EQ(recv_elems(g, 1, 3), 15u);
  OpSpec rs = spec(OpKind::ReduceScatter, nullptr, nullptr, 5);
  EXPECT_EQ(send_elems(rs, 2, 3), 15u);
  EXPECT_EQ(recv_elems(rs, 2, 3), 5u);
  std::vector<size_t> sc = {1, 2, 3}, rc = {4, 0, 1};
  OpSpec v = spec(OpKind::AllToAllV, nullptr, nullptr, 0);
  v.send_counts = sc;
  v.recv_counts = rc;
  EXPECT_EQ(send_elems(v, 0, 3), 6u);
  EXPECT_EQ(recv_elems(v, 0, 3), 5u);
}

std::string validation_error(const OpSpec& s, int rank, int size) {
  try {
    validate(s, rank, size, "tp[1]");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(OpSpec, ValidationNamesTheProblem) {
  float buf[8];
  EXPECT_EQ(validation_error(spec(OpKind::Broadcast, buf, buf, 2, 2), 0, 2),
            "broadcast on group 'tp[1]' (rank 0 of 2): root 2 is outside the group");
  OpSpec u8 = spec(OpKind::AllReduce, buf, buf, 2);
  u8.dtype = DType::U8;
  EXPECT_NE(validation_error(u8, 0, 2).find("dtype U8 cannot be reduced"), std::string::npos);
  EXPECT_NE(validation_error(spec(OpKind::AllReduce, buf, buf + 1, 4), 0, 2).find("overlap"),
            std::string::npos);
  EXPECT_NE(validation_error(spec(OpKind::AllReduce, nullptr, buf, 4), 0, 2).find("null"),
            std::string::npos);
  OpSpec v = spec(OpKind::AllToAllV, buf, buf + 4, 0);
  EXPECT_NE(validation_error(v, 0, 2).find("0 send counts and 0 recv counts"), std::string::npos);
  EXPECT_EQ(validation_error(spec(OpKind::AllGather, buf + 2, buf, 2), 1, 2), "");
  EXPECT_EQ(validation_error(spec(OpKind::Reduce, buf, nullptr, 4, 1), 0, 2), "");  // non-root
}

TEST(OpSpec, DescribeArgs) {
  OpSpec s = spec(OpKind::Reduce, nullptr, nullptr, 7, 3);
  s.dtype = DType::BF16;
  s.op = ReduceOp::Avg;
  EXPECT_EQ(describe_args(s), "reduce(count=7, BF16, avg, root=3)");
  EXPECT_EQ(describe_args(OpSpec{}), "barrier()");
  OpSpec p = spec(OpKind::Send, nullptr, nullptr, 2, 1);
  p.tag = 4;
  EXPECT_EQ(describe_args(p), "send(count=2, F32, to=1, tag=4)");
}

TEST(Staging, Bf16RoundTripAndAverage) {
  const float vals[4] = {1.0f, -2.5f, 3.0f, 100.0f};
  uint16_t h[4];
  for (int i = 0; i < 4; ++i) h[i] = f32_to_bf16(vals[i]);
  float wide[4];
  widen_to_f32(h, DType::BF16, wide, 4);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(wide[i], vals[i]);
  uint16_t out[4];
  narrow_from_f32(wide, out, DType::F16, 4, /*divisor=*/2);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(f16_to_f32(out[i]), vals[i] / 2);
}

TEST(Staging, IntegerAverageTruncatesTowardZero) {
  int32_t v[3] = {7, -7, 6};
  divide_in_place(v, DType::I32, 3, 2);
  EXPECT_EQ(v[0], 3);
  EXPECT_EQ(v[1], -3);
  EXPECT_EQ(v[2], 3);
}

TEST(Staging, BuffersAreAccountedAsCommunication) {
  Allocator a;
  {
    StagingBuffer b(&a, 4096);
    EXPECT_EQ(a.current(MemTag::Communication), 4096);
  }
  EXPECT_EQ(a.current(MemTag::Communication), 0);
}

}  // namespace
}  // namespace parallm::comm
