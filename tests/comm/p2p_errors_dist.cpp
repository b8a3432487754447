// Point-to-point (ring exchange, tags, size mismatch) and the errors that
// keep a job from hanging: mismatched collectives are reported on every rank
// with both calls named, and an async wait past its timeout throws an Error
// naming the operation, group, rank and sequence number.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>

#include "base/error.h"
#include "comm/test_device_staging.h"
#include "dist_env.h"
#include "tensor/test_device_memory.h"

namespace parallm::comm::dist {
namespace {

using std::chrono::milliseconds;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(PointToPoint, RingBlockingAndAsync) {
  for (Communicator* c : dist_env().groups) {
    const int r = c->rank(), p = c->size();
    if (p < 2) continue;
    const int next = (r + 1) % p, prev = (r + p - 1) % p;
    for (DType t : kDTypes)
      for (size_t n : {size_t{1}, size_t{7}, size_t{100003}})
        for (bool async : {false, true}) {
          Buf out(t, n), in(t, n);
          for (size_t i = 0; i < n; ++i) out.set(i, move_value(r, i));
          if (async) {
            Work rw = c->recv_async(in.ptr(), n, t, prev, 5);
            Work sw = c->send_async(out.ptr(), n, t, next, 5);
            sw.wait();
            rw.wait();
          } else if (r % 2 == 0) {  // odd ranks receive first: no cycle of blocking sends
            c->send(out.ptr(), n, t, next, 5);
            c->recv(in.ptr(), n, t, prev, 5);
          } else {
            c->recv(in.ptr(), n, t, prev, 5);
            c->send(out.ptr(), n, t, next, 5);
          }
          expect_values(
              in, 0, n, [&](size_t i) { return move_value(prev, i); },
              case_name(*c, "ring send/recv", t, n, false, async));
        }
  }
}

TEST(PointToPoint, TagsSelectMessages) {
  Communicator& w = *dist_env().world;
  if (w.size() < 2 || w.rank() > 1) return;
  if (w.rank() == 0) {
    int32_t a = 10, b = 20;
    Work wa = w.send_async(&a, 1, DType::I32, 1, /*tag=*/1);
    Work wb = w.send_async(&b, 1, DType::I32, 1, /*tag=*/2);
    wa.wait();
    wb.wait();
  } else {
    int32_t a = 0, b = 0;
    w.recv(&b, 1, DType::I32, 0, 2);  // the later message first
    w.recv(&a, 1, DType::I32, 0, 1);
    EXPECT_EQ(a, 10);
    EXPECT_EQ(b, 20);
  }
}

// On the test device's world (comm::TestDeviceStaging) point-to-point on
// device buffers matches as NCCL's does, per pair in issue order with tags
// ignored, so a receiver that relies on tags to reorder gets the other
// message: the pipeline and ring layouts run there to prove they never do.
// Host buffers keep MPI's tag matching.
TEST(PointToPoint, TestDeviceBuffersMatchInIssueOrder) {
  Communicator& w = *dist_env().world;
  if (w.size() < 2 || w.rank() > 1) return;
  TestDeviceStaging staged(w);
  TestDeviceMemory mem;
  auto* dev = static_cast<int32_t*>(mem.allocate(2 * sizeof(int32_t)));
  int32_t host[2] = {10, 20};
  if (w.rank() == 0) {
    mem.copy(dev, host, sizeof(host));
    Work wa = staged.send_async(dev, 1, DType::I32, 1, /*tag=*/1);
    Work wb = staged.send_async(dev + 1, 1, DType::I32, 1, /*tag=*/2);
    wa.wait();
    wb.wait();
    staged.send(&host[0], 1, DType::I32, 1, 1);
    staged.send(&host[1], 1, DType::I32, 1, 2);
  } else {
    staged.recv(dev + 1, 1, DType::I32, 0, 2);  // tag 2 first: gets the first message
    staged.recv(dev, 1, DType::I32, 0, 1);
    int32_t got[2] = {};
    mem.copy(got, dev, sizeof(got));
    EXPECT_EQ(got[1], 10);
    EXPECT_EQ(got[0], 20);
    int32_t a = 0, b = 0;
    staged.recv(&b, 1, DType::I32, 0, 2);  // host buffers: the tag picks the message
    staged.recv(&a, 1, DType::I32, 0, 1);
    EXPECT_EQ(a, 10);
    EXPECT_EQ(b, 20);
  }
  mem.release(dev, 2 * sizeof(int32_t));
}

TEST(PointToPoint, ShortMessageIsAnError) {
  Communicator& w = *dist_env().world;
  if (w.size() < 2 || w.rank() > 1) return;
  int32_t buf[7] = {1, 2, 3, 4, 5, 6, 7};
  if (w.rank() == 0) {
    w.send(buf, 5, DType::I32, 1, 9);
  } else {
    const std::string msg = error_of([&] { w.recv(buf, 7, DType::I32, 0, 9); });
    EXPECT_NE(msg.find("expected 7 elements, the sender sent 5"), std::string::npos) << msg;
    EXPECT_NE(msg.find("recv #"), std::string::npos) << msg;
    EXPECT_NE(msg.find("from rank 0 (tag 9) on group 'world'"), std::string::npos) << msg;
  }
}

TEST(Errors, MismatchedCollectivesAreNamed) {
  Communicator& w = *dist_env().world;  // checking is on
  const int p = w.size();
  if (p < 2) return;
  float x[8] = {};
  const uint64_t seq = w.collectives_issued() + 1;
  const std::string msg = error_of([&] {
    if (w.rank() == 0) {
      w.all_reduce(x, 7, DType::F32, ReduceOp::Sum);
    } else {
      w.broadcast(x, 7, DType::F32, 0);
    }
  });
  EXPECT_NE(msg.find("collective mismatch"), std::string::npos) << msg;
  EXPECT_NE(msg.find(fmt::format("rank 0 called all_reduce(count=7, F32, sum) as #{}", seq)),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("called broadcast(count=7, F32, root=0)"), std::string::npos) << msg;
  // A count mismatch on the same operation, then an async one.
  const std::string count_msg =
      error_of([&] { w.all_reduce(x, w.rank() == p - 1 ? 8 : 7, DType::F32, ReduceOp::Max); });
  EXPECT_NE(count_msg.find("all_reduce(count=8, F32, max)"), std::string::npos) << count_msg;
  const std::string async_msg = error_of([&] {
    int32_t mine[2] = {}, all[16] = {};
    Work a = w.all_gather_async(mine, all, w.rank() == 0 ? 1 : 2, DType::I32);
    a.wait();
  });
  EXPECT_NE(async_msg.find("collective mismatch at all_gather"), std::string::npos) << async_msg;
  // Nothing moved, so the group still works.
  float one = 1;
  w.all_reduce(&one, 1, DType::F32, ReduceOp::Sum);
  EXPECT_EQ(one, static_cast<float>(p));
}

TEST(Errors, AllToAllVCountMismatchIsNamed) {
  Communicator& w = *dist_env().world;
  const int p = w.size();
  if (p < 2) return;
  std::vector<size_t> sc(p, 1), rc(p, 1);
  if (w.rank() == 1) rc[0] = 2;  // rank 1 expects 2 elements from rank 0, which sends 1
  std::vector<int32_t> in(2 * p), out(2 * p);
  const std::string msg =
      error_of([&] { w.all_to_all_v(in.data(), sc, out.data(), rc, DType::I32); });
  if (w.rank() == 1) {
    EXPECT_NE(msg.find("rank 0 sends 1 elements to rank 1, which expects 2"), std::string::npos)
        << msg;
  } else {
    EXPECT_NE(msg.find("count mismatch"), std::string::npos) << msg;
  }
}

// Rank 0's all-reduce cannot complete before its 300 ms timeout whatever
// the scheduling: the other ranks join only after rank 0 tells them (on the
// separate world communicator) that its wait has thrown. Their 30 s timeout
// and the 30 s retry are hang guards only.
TEST(Errors, AsyncTimeoutNamesTheOperation) {
  auto& env = dist_env();
  const int p = env.world->size();
  if (p < 2) return;
  CommOptions opts;  // no checking: the late ranks must not be waited for up front
  opts.timeout = env.world->rank() == 0 ? milliseconds(300) : milliseconds(30000);
  auto w = env.runtime->world(opts);
  float x = 1;
  int32_t timed_out = 0;
  if (w->rank() == 0) {
    Work a = w->all_reduce_async(&x, &x, 1, DType::F32, ReduceOp::Sum);
    const auto start = std::chrono::steady_clock::now();
    const std::string msg = error_of([&] { a.wait(); });
    std::printf("rank 0's all_reduce timed out after %.0f ms (timeout 300 ms)\n",
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                    .count());
    EXPECT_NE(
        msg.find(fmt::format(
            "all_reduce #1 on group 'world' (rank 0 of {}) did not complete within 300 ms", p)),
        std::string::npos)
        << msg;
    EXPECT_FALSE(a.done());
    timed_out = !msg.empty();
    for (int r = 1; r < p; ++r) env.world->send(&timed_out, 1, DType::I32, r, 77);
    a.wait(std::chrono::seconds(30));  // the others arrive; the op completes
  } else {
    env.world->recv(&timed_out, 1, DType::I32, 0, 77);
    w->all_reduce(&x, 1, DType::F32, ReduceOp::Sum);
  }
  EXPECT_EQ(timed_out, 1);
  EXPECT_EQ(x, static_cast<float>(p));
}

TEST(Errors, InvalidCallsAreRejectedLocally) {
  Communicator& w = *dist_env().world;
  float x[4] = {};
  std::string msg = error_of([&] { w.broadcast(x, 1, DType::F32, w.size()); });
  EXPECT_NE(msg.find(fmt::format("root {} is outside the group", w.size())), std::string::npos)
      << msg;
  msg = error_of([&] { w.all_reduce(x, 1, DType::U8, ReduceOp::Sum); });
  EXPECT_NE(msg.find("dtype U8 cannot be reduced"), std::string::npos) << msg;
  msg = error_of([&] { w.all_reduce(x, x + 1, 2, DType::F32, ReduceOp::Sum); });
  EXPECT_NE(msg.find("overlap without being in place"), std::string::npos) << msg;
}

}  // namespace
}  // namespace parallm::comm::dist
