// broadcast, gather, all_gather, scatter, all_to_all, all_to_all_v and
// barrier under mpirun: every group, dtype, odd count, in place or not,
// blocking or async. Each element's expected value is computed from the rank
// that sent it and its index, so misplaced blocks are caught.
#include <gtest/gtest.h>

#include <numeric>

#include "dist_env.h"

namespace parallm::comm::dist {
namespace {

template <class Blocking, class Async>
void call(bool async, Blocking blocking, Async start) {
  if (async) {
    Work w = start();
    w.wait();
  } else {
    blocking();
  }
}

TEST(Movement, Broadcast) {
  for_each_case([](Communicator& c, DType t, size_t n, bool ip, bool async) {
    const int r = c.rank(), p = c.size(), root = p - 1;
    Buf send(t, n), recv(t, n);
    for (size_t i = 0; i < n; ++i) send.set(i, r == root ? move_value(root, i) : -1.0);
    Buf& dst = ip ? send : recv;
    call(
        async, [&] { c.broadcast(send.ptr(), dst.ptr(), n, t, root); },
        [&] { return c.broadcast_async(send.ptr(), dst.ptr(), n, t, root); });
    expect_values(
        dst, 0, n, [&](size_t i) { return move_value(root, i); },
        case_name(c, "broadcast", t, n, ip, async));
  });
}

TEST(Movement, Gather) {
  for_each_case([](Communicator& c, DType t, size_t n, bool ip, bool async) {
    const int r = c.rank(), p = c.size(), root = static_cast<int>(n) % p;
    Buf send(t, n), recv(t, n * p);
    for (size_t i = 0; i < n; ++i) send.set(i, move_value(r, i));
    const void* src = send.ptr();
    if (ip && r == root) {  // the root's block is already in place
      for (size_t i = 0; i < n; ++i) recv.set(n * r + i, move_value(r, i));
      src = recv.ptr(n * r);
    }
    call(
        async, [&] { c.gather(src, recv.ptr(), n, t, root); },
        [&] { return c.gather_async(src, recv.ptr(), n, t, root); });
    if (r == root)
      expect_values(
          recv, 0, n * p, [&](size_t g) { return move_value(g / n, g % n); },
          case_name(c, "gather", t, n, ip, async));
  });
}

TEST(Movement, AllGather) {
  for_each_case([](Communicator& c, DType t, size_t n, bool ip, bool async) {
    const int r = c.rank(), p = c.size();
    Buf send(t, n), recv(t, n * p);
    for (size_t i = 0; i < n; ++i) send.set(i, move_value(r, i));
    const void* src = send.ptr();
    if (ip) {
      for (size_t i = 0; i < n; ++i) recv.set(n * r + i, move_value(r, i));
      src = recv.ptr(n * r);
    }
    call(
        async, [&] { c.all_gather(src, recv.ptr(), n, t); },
        [&] { return c.all_gather_async(src, recv.ptr(), n, t); });
    expect_values(
        recv, 0, n * p, [&](size_t g) { return move_value(g / n, g % n); },
        case_name(c, "all_gather", t, n, ip, async));
  });
}

TEST(Movement, Scatter) {
  for_each_case([](Communicator& c, DType t, size_t n, bool ip, bool async) {
    const int r = c.rank(), p = c.size(), root = (static_cast<int>(n) + 1) % p;
    Buf send(t, n * p), recv(t, n);
    if (r == root)
      for (size_t g = 0; g < n * p; ++g) send.set(g, move_value(g / n, g % n));
    Buf& dst_buf = ip && r == root ? send : recv;
    void* dst = ip && r == root ? send.ptr(n * r) : recv.ptr();
    call(
        async, [&] { c.scatter(send.ptr(), dst, n, t, root); },
        [&] { return c.scatter_async(send.ptr(), dst, n, t, root); });
    expect_values(
        dst_buf, ip && r == root ? n * r : 0, n, [&](size_t i) { return move_value(r, i); },
        case_name(c, "scatter", t, n, ip, async));
  });
}

TEST(Movement, AllToAll) {
  for_each_case([](Communicator& c, DType t, size_t n, bool ip, bool async) {
    const int r = c.rank(), p = c.size();
    Buf send(t, n * p), recv(t, n * p);
    for (size_t g = 0; g < n * p; ++g) send.set(g, a2a_value(r, g / n, g % n));
    Buf& dst = ip ? send : recv;
    call(
        async, [&] { c.all_to_all(send.ptr(), dst.ptr(), n, t); },
        [&] { return c.all_to_all_async(send.ptr(), dst.ptr(), n, t); });
    expect_values(
        dst, 0, n * p, [&](size_t g) { return a2a_value(g / n, r, g % n); },
        case_name(c, "all_to_all", t, n, ip, async));
  });
}

// count(s, d): elements rank s sends rank d; symmetric when in place (MPI's
// in-place all_to_all_v exchanges equal counts), and 0 for some pairs.
size_t v_count(size_t base, int s, int d, bool symmetric) {
  const int k = symmetric ? (s + d) % 3 : (2 * s + d) % 3;
  return k == 0 ? 0 : base * static_cast<size_t>(k);
}

TEST(Movement, AllToAllV) {
  for_each_case([](Communicator& c, DType t, size_t n, bool ip, bool async) {
    const int r = c.rank(), p = c.size();
    std::vector<size_t> sc(p), rc(p), soff(p + 1, 0), roff(p + 1, 0);
    for (int j = 0; j < p; ++j) {
      sc[j] = v_count(n, r, j, ip);
      rc[j] = v_count(n, j, r, ip);
      soff[j + 1] = soff[j] + sc[j];
      roff[j + 1] = roff[j] + rc[j];
    }
    Buf send(t, soff[p]), recv(t, roff[p]);
    for (int j = 0; j < p; ++j)
      for (size_t i = 0; i < sc[j]; ++i) send.set(soff[j] + i, a2a_value(r, j, i));
    Buf& dst = ip ? send : recv;
    call(
        async, [&] { c.all_to_all_v(send.ptr(), sc, dst.ptr(), rc, t); },
        [&] { return c.all_to_all_v_async(send.ptr(), sc, dst.ptr(), rc, t); });
    for (int j = 0; j < p; ++j)
      expect_values(
          dst, roff[j], rc[j], [&](size_t i) { return a2a_value(j, r, i); },
          case_name(c, "all_to_all_v", t, n, ip, async) + fmt::format(" from {}", j));
  });
}

// After a barrier, every rank has written its mark: checked through a later
// all_gather of the marks that were set before the barrier.
TEST(Movement, Barrier) {
  for (Communicator* c : dist_env().groups) {
    c->barrier();
    Work w = c->barrier_async();
    w.wait();
    int32_t mine = c->rank() * 3;
    std::vector<int32_t> all(c->size());
    c->all_gather(&mine, all.data(), 1, DType::I32);
    for (int q = 0; q < c->size(); ++q) EXPECT_EQ(all[q], q * 3) << c->label();
  }
}

}  // namespace
}  // namespace parallm::comm::dist
