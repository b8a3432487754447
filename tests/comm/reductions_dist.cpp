// all_reduce, reduce and reduce_scatter under mpirun: every group, dtype,
// reduce op, odd count, in place or not, blocking or async. Inputs are small
// integers from (rank, index), so the expectation is exact in every dtype,
// including bf16 summed over 8 ranks; avg follows fp32 (floats) or truncating
// integer division.
#include <gtest/gtest.h>

#include "base/error.h"
#include "comm/tensor_collectives.h"
#include "dist_env.h"
#include "tensor/allocator.h"
#include "tensor/half.h"

namespace parallm::comm::dist {
namespace {

TEST(Reductions, AllReduce) {
  for_each_case([](Communicator& c, DType t, size_t n, bool ip, bool async) {
    for (ReduceOp op : kOps) {
      const int r = c.rank(), p = c.size();
      Buf in(t, n), out(t, n);
      for (size_t i = 0; i < n; ++i) in.set(i, reduce_value(r, i));
      Buf& res = ip ? in : out;
      if (async) {
        Work w = c.all_reduce_async(in.ptr(), res.ptr(), n, t, op);
        w.wait();
      } else {
        c.all_reduce(in.ptr(), res.ptr(), n, t, op);
      }
      expect_values(
          res, 0, n,
          [&](size_t i) {
            return expect_reduce(op, t, p, [&](int q) { return reduce_value(q, i); });
          },
          case_name(c, reduce_op_name(op), t, n, ip, async));
    }
  });
}

TEST(Reductions, Reduce) {
  for_each_case([](Communicator& c, DType t, size_t n, bool ip, bool async) {
    for (ReduceOp op : kOps) {
      const int r = c.rank(), p = c.size();
      const int root = static_cast<int>(op) % p;
      Buf in(t, n), out(t, n);
      for (size_t i = 0; i < n; ++i) in.set(i, reduce_value(r, i));
      for (size_t i = 0; i < n; ++i) out.set(i, -99);
      Buf& res = ip ? in : out;
      if (async) {
        Work w = c.reduce_async(in.ptr(), res.ptr(), n, t, op, root);
        w.wait();
      } else {
        c.reduce(in.ptr(), res.ptr(), n, t, op, root);
      }
      const std::string name = case_name(c, reduce_op_name(op), t, n, ip, async);
      if (r == root) {
        expect_values(
            res, 0, n,
            [&](size_t i) {
              return expect_reduce(op, t, p, [&](int q) { return reduce_value(q, i); });
            },
            name + " (root)");
      } else if (!ip) {  // a non-root's recv buffer is not touched
        expect_values(
            out, 0, n, [](size_t) { return -99.0; }, name + " (non-root recv)");
      }
    }
  });
}

TEST(Reductions, ReduceScatter) {
  for_each_case([](Communicator& c, DType t, size_t n, bool ip, bool async) {
    for (ReduceOp op : kOps) {
      const int r = c.rank(), p = c.size();
      Buf in(t, n * p), out(t, n);
      for (size_t g = 0; g < n * p; ++g) in.set(g, reduce_value(r, g));
      void* recv = ip ? in.ptr(n * r) : out.ptr();
      if (async) {
        Work w = c.reduce_scatter_async(in.ptr(), recv, n, t, op);
        w.wait();
      } else {
        c.reduce_scatter(in.ptr(), recv, n, t, op);
      }
      expect_values(
          ip ? in : out, ip ? n * r : 0, n,
          [&](size_t i) {
            return expect_reduce(op, t, p, [&](int q) { return reduce_value(q, n * r + i); });
          },
          case_name(c, reduce_op_name(op), t, n, ip, async));
    }
  });
}

// Sums of at least 128 KiB go around the MPI backend's ring
// (comm/mpi/ring_reduce_scatter.h) instead of MPI_Reduce_scatter_block:
// f32 directly, bf16 on its fp32 staging copy; avg is the ring's
// sum divided afterwards. Odd block length, in place or not, blocking or
// async, every group.
TEST(Reductions, LargeReduceScatterGoesAroundTheRing) {
  constexpr size_t n = 40003;  // x 4 bytes x ranks >= 128 KiB
  for (Communicator* c : dist_env().groups)
    for (DType t : {DType::F32, DType::BF16})
      for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Avg})
        for (bool ip : {false, true})
          for (bool async : {false, true}) {
            const int r = c->rank(), p = c->size();
            Buf in(t, n * p), out(t, n);
            for (size_t g = 0; g < n * p; ++g) in.set(g, reduce_value(r, g));
            void* recv = ip ? in.ptr(n * r) : out.ptr();
            if (async) {
              Work w = c->reduce_scatter_async(in.ptr(), recv, n, t, op);
              w.wait();
            } else {
              c->reduce_scatter(in.ptr(), recv, n, t, op);
            }
            expect_values(
                ip ? in : out, ip ? n * r : 0, n,
                [&](size_t i) {
                  return expect_reduce(op, t, p, [&](int q) { return reduce_value(q, n * r + i); });
                },
                case_name(*c, reduce_op_name(op), t, n, ip, async));
          }
}

// The sequence number counts collectives per group and appears in messages.
TEST(Reductions, SequenceNumbersCountCollectives) {
  Communicator& w = *dist_env().world;
  const uint64_t before = w.collectives_issued();
  float x = 1;
  w.all_reduce(&x, 1, DType::F32, ReduceOp::Sum);
  Work a = w.barrier_async();
  a.wait();
  EXPECT_EQ(w.collectives_issued(), before + 2);
  EXPECT_EQ(x, static_cast<float>(w.size()));
}

// Blocking and async calls are interchangeable across ranks (both run MPI's
// blocking collective), and a blocking call queues behind pending async ones.
TEST(Reductions, BlockingAndAsyncMixAcrossRanks) {
  for (Communicator* c : dist_env().groups) {
    const int r = c->rank(), p = c->size();
    std::vector<int64_t> v(4);
    std::vector<Work> pending;
    for (int k = 0; k < 4; ++k) {
      v[k] = (r + 1) * (k + 1);
      const bool async = (r + k) % 2 == 0 && k < 3;
      if (async) {
        pending.push_back(c->all_reduce_async(&v[k], &v[k], 1, DType::I64, ReduceOp::Sum));
      } else {
        c->all_reduce(&v[k], 1, DType::I64, ReduceOp::Sum);
      }
    }
    for (Work& w : pending) w.wait();
    for (int k = 0; k < 4; ++k)
      EXPECT_EQ(v[k], static_cast<int64_t>(p) * (p + 1) / 2 * (k + 1)) << c->label() << " k=" << k;
  }
}

// The Tensor forms: all_reduce, all_gather and reduce_scatter on bf16 tensors.
TEST(Reductions, TensorForms) {
  Communicator& w = *dist_env().world;
  const int r = w.rank(), p = w.size();
  Allocator alloc;
  Tensor t = Tensor::zeros(alloc, Shape{2, 3}, DType::BF16, MemTag::Gradient);
  for (int i = 0; i < 6; ++i) t.half_bits()[i] = f32_to_bf16(static_cast<float>(r + i));
  all_reduce(w, t, ReduceOp::Avg);
  for (int i = 0; i < 6; ++i)  // avg: the fp32 sum divided by p, rounded to bf16 once
    EXPECT_EQ(t.half_bits()[i], f32_to_bf16(static_cast<float>(p * (p - 1) / 2 + p * i) / p));
  Tensor all = Tensor::zeros(alloc, Shape{p, 2, 3}, DType::BF16, MemTag::Activation);
  all_gather(w, t, all);
  Tensor part = Tensor::zeros(alloc, Shape{2, 3}, DType::BF16, MemTag::Activation);
  reduce_scatter(w, all, part, ReduceOp::Sum);  // every block is t: the sum is p x t
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(part.half_bits()[i], f32_to_bf16(bf16_to_f32(t.half_bits()[i]) * p));
  Tensor wrong = Tensor::zeros(alloc, Shape{5}, DType::BF16, MemTag::Activation);
  if (p > 1) {
    EXPECT_THROW(all_gather(w, t, wrong), Error);
  }
}

// A reduction through the test() polling path rather than wait().
TEST(Reductions, PollWithTest) {
  Communicator& w = *dist_env().world;
  int64_t v = w.rank() + 1;
  Work a = w.all_reduce_async(&v, &v, 1, DType::I64, ReduceOp::Sum);
  while (!a.test()) {
  }
  EXPECT_TRUE(a.done());
  EXPECT_EQ(v, static_cast<int64_t>(w.size()) * (w.size() + 1) / 2);
}

}  // namespace
}  // namespace parallm::comm::dist
