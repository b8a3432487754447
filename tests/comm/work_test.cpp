// Work and Watchdog without MPI: a fake PendingOp shows the timeout message
// (operation, group, rank, sequence number) and that a timed-out op can be
// waited on again; the watchdog reports an overrunning blocking call once.
#include "comm/work.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

#include "base/error.h"
#include "comm/watchdog.h"

namespace parallm::comm {
namespace {

using std::chrono::milliseconds;

class FakeOp : public PendingOp {
 public:
  explicit FakeOp(std::atomic<bool>& done) : done_(done) {}
  bool poll() override { return done_.load(); }
  std::string describe() const override { return "all_reduce #17 on group 'tp[1]' (rank 1 of 2)"; }
  milliseconds default_timeout() const override { return milliseconds(50); }

 private:
  std::atomic<bool>& done_;
};

TEST(Work, TimeoutNamesTheOperationAndCanBeRetried) {
  std::atomic<bool> done{false};
  Work w(std::make_unique<FakeOp>(done));
  EXPECT_FALSE(w.test());
  try {
    w.wait(milliseconds(30));
    FAIL() << "no timeout";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind(
                  "all_reduce #17 on group 'tp[1]' (rank 1 of 2) did not complete within 30 ms", 0),
              0u)
        << e.what();
  }
  EXPECT_FALSE(w.done());
  done = true;
  w.wait();
  EXPECT_TRUE(w.done());
  Work empty;
  EXPECT_TRUE(empty.test());
}

TEST(Work, FormatDuration) {
  EXPECT_EQ(format_duration(milliseconds(250)), "250 ms");
  EXPECT_EQ(format_duration(milliseconds(30000)), "30 s");
  EXPECT_EQ(format_duration(milliseconds(120000)), "2 min");
  EXPECT_EQ(format_duration(milliseconds(12500)), "12.5 s");
}

// Under `ctest -j` beside oversubscribed MPI jobs the watchdog thread may not
// run for a long time, so nothing here depends on when it runs: the stuck
// call stays armed until the report arrives (the 60 s wait only guards
// against a watchdog that never reports), and the quick call's deadline is
// out of reach. The wall time to the report is printed, not asserted.
TEST(Watchdog, ReportsAnOverrunningCallOnce) {
  int fired = 0;
  std::string message;
  std::mutex mu;
  std::condition_variable cv;
  Watchdog dog(
      [&](const std::string& m) {
        std::lock_guard<std::mutex> lock(mu);
        message = m;
        ++fired;
        cv.notify_all();
      },
      milliseconds(5));
  auto slot = dog.add_slot("group 'dp[0]' (rank 3 of 4)");
  { WatchGuard quick(*slot, "broadcast", 1, -1, std::chrono::hours(1)); }
  const auto start = std::chrono::steady_clock::now();
  {
    WatchGuard slow(*slot, "all_gather", 9, -1, milliseconds(20));
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(60), [&] { return fired > 0; }))
        << "no report of a call stuck past its 20 ms timeout within 60 s";
    std::printf("watchdog reported the 20 ms overrun after %.0f ms\n",
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                    .count());
    // The call stays stuck for 20 more periods: no second report. (A watchdog
    // that does not run meanwhile proves less, but cannot fail the test.)
    lock.unlock();
    std::this_thread::sleep_for(milliseconds(100));
  }
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_EQ(fired, 1);
  EXPECT_EQ(message.rfind(
                "all_gather #9 on group 'dp[0]' (rank 3 of 4) did not complete within 20 ms", 0),
            0u)
      << message;
}

}  // namespace
}  // namespace parallm::comm
