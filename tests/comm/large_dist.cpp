// Every collective once at the large odd count 1000003 (per-rank block), on
// the world and on one split group, with dtypes rotated over the calls so
// each dtype meets a large message; the small-count matrix covers the rest.
#include <gtest/gtest.h>

#include <numeric>

#include "dist_env.h"

namespace parallm::comm::dist {
namespace {

constexpr size_t kLarge = 1000003;

std::vector<Communicator*> large_groups() {
  auto& g = dist_env().groups;
  std::vector<Communicator*> out = {g[0]};
  if (g.size() > 1) out.push_back(g[1]);  // mod2[*]
  return out;
}

TEST(Large, Reductions) {
  for (Communicator* c : large_groups()) {
    const int r = c->rank(), p = c->size();
    struct Case {
      DType t;
      ReduceOp op;
      bool ip;
    };
    for (Case k : {Case{DType::F32, ReduceOp::Sum, false}, Case{DType::BF16, ReduceOp::Avg, true},
                   Case{DType::F16, ReduceOp::Max, false}, Case{DType::I64, ReduceOp::Min, true}}) {
      Buf in(k.t, kLarge), out(k.t, kLarge);
      for (size_t i = 0; i < kLarge; ++i) in.set(i, reduce_value(r, i));
      Buf& res = k.ip ? in : out;
      c->all_reduce(in.ptr(), res.ptr(), kLarge, k.t, k.op);
      expect_values(
          res, 0, kLarge,
          [&](size_t i) {
            return expect_reduce(k.op, k.t, p, [&](int q) { return reduce_value(q, i); });
          },
          case_name(*c, "large all_reduce", k.t, kLarge, k.ip, false));
    }
    {  // reduce_scatter, in place, bf16 sum, async
      Buf in(DType::BF16, kLarge * p);
      for (size_t g = 0; g < kLarge * p; ++g) in.set(g, reduce_value(r, g));
      Work w =
          c->reduce_scatter_async(in.ptr(), in.ptr(kLarge * r), kLarge, DType::BF16, ReduceOp::Sum);
      w.wait();
      expect_values(
          in, kLarge * r, kLarge,
          [&](size_t i) {
            return expect_reduce(ReduceOp::Sum, DType::BF16, p,
                                 [&](int q) { return reduce_value(q, kLarge * r + i); });
          },
          case_name(*c, "large reduce_scatter", DType::BF16, kLarge, true, true));
    }
    {  // reduce to the last rank, i32 sum
      Buf in(DType::I32, kLarge), out(DType::I32, kLarge);
      for (size_t i = 0; i < kLarge; ++i) in.set(i, reduce_value(r, i));
      c->reduce(in.ptr(), out.ptr(), kLarge, DType::I32, ReduceOp::Sum, p - 1);
      if (r == p - 1)
        expect_values(
            out, 0, kLarge,
            [&](size_t i) {
              return expect_reduce(ReduceOp::Sum, DType::I32, p,
                                   [&](int q) { return reduce_value(q, i); });
            },
            case_name(*c, "large reduce", DType::I32, kLarge, false, false));
    }
  }
}

TEST(Large, Movement) {
  for (Communicator* c : large_groups()) {
    const int r = c->rank(), p = c->size();
    const size_t n = kLarge;
    {  // all_gather, bf16, in place
      Buf recv(DType::BF16, n * p);
      for (size_t i = 0; i < n; ++i) recv.set(n * r + i, move_value(r, i));
      c->all_gather(recv.ptr(n * r), recv.ptr(), n, DType::BF16);
      expect_values(
          recv, 0, n * p, [&](size_t g) { return move_value(g / n, g % n); },
          case_name(*c, "large all_gather", DType::BF16, n, true, false));
    }
    {  // gather to rank 0, f16, async
      Buf send(DType::F16, n), recv(DType::F16, n * p);
      for (size_t i = 0; i < n; ++i) send.set(i, move_value(r, i));
      Work w = c->gather_async(send.ptr(), recv.ptr(), n, DType::F16, 0);
      w.wait();
      if (r == 0)
        expect_values(
            recv, 0, n * p, [&](size_t g) { return move_value(g / n, g % n); },
            case_name(*c, "large gather", DType::F16, n, false, true));
    }
    {  // scatter from the last rank, i32; broadcast from rank 0, f32
      Buf send(DType::I32, n * p), recv(DType::I32, n);
      if (r == p - 1)
        for (size_t g = 0; g < n * p; ++g) send.set(g, move_value(g / n, g % n));
      c->scatter(send.ptr(), recv.ptr(), n, DType::I32, p - 1);
      expect_values(
          recv, 0, n, [&](size_t i) { return move_value(r, i); },
          case_name(*c, "large scatter", DType::I32, n, false, false));
      Buf b(DType::F32, n);
      for (size_t i = 0; i < n; ++i) b.set(i, r == 0 ? move_value(0, i) : 0.0);
      c->broadcast(b.ptr(), n, DType::F32, 0);
      expect_values(
          b, 0, n, [&](size_t i) { return move_value(0, i); },
          case_name(*c, "large broadcast", DType::F32, n, true, false));
    }
    {  // all_to_all, i64; all_to_all_v, f16 with uneven counts
      Buf send(DType::I64, n * p), recv(DType::I64, n * p);
      for (size_t g = 0; g < n * p; ++g) send.set(g, a2a_value(r, g / n, g % n));
      c->all_to_all(send.ptr(), recv.ptr(), n, DType::I64);
      expect_values(
          recv, 0, n * p, [&](size_t g) { return a2a_value(g / n, r, g % n); },
          case_name(*c, "large all_to_all", DType::I64, n, false, false));
      std::vector<size_t> sc(p), rc(p);
      for (int j = 0; j < p; ++j) {
        sc[j] = (r + j) % 2 == 0 ? n : 7;
        rc[j] = (j + r) % 2 == 0 ? n : 7;
      }
      const size_t ns = std::accumulate(sc.begin(), sc.end(), size_t{0});
      const size_t nr = std::accumulate(rc.begin(), rc.end(), size_t{0});
      Buf vs(DType::F16, ns), vr(DType::F16, nr);
      for (size_t j = 0, off = 0; j < static_cast<size_t>(p); off += sc[j], ++j)
        for (size_t i = 0; i < sc[j]; ++i) vs.set(off + i, a2a_value(r, static_cast<int>(j), i));
      Work w = c->all_to_all_v_async(vs.ptr(), sc, vr.ptr(), rc, DType::F16);
      w.wait();
      for (size_t j = 0, off = 0; j < static_cast<size_t>(p); off += rc[j], ++j)
        expect_values(
            vr, off, rc[j], [&](size_t i) { return a2a_value(static_cast<int>(j), r, i); },
            case_name(*c, "large all_to_all_v", DType::F16, n, false, true));
    }
  }
}

}  // namespace
}  // namespace parallm::comm::dist
