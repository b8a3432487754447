// The lines the supervisor reads (launch/job_log.h), as parallm and Open MPI
// print them: a progress line, a resume, a planted failure, a rank's error,
// the watchdog's message and mpirun's note of a rank killed by a signal.
#include "launch/job_log.h"

#include <gtest/gtest.h>

namespace parallm {
namespace {

TEST(JobLog, ReadsEachKindOfLine) {
  auto step = read_job_line(
      "step     7/30 | loss 5.5649 | lr 7.00e-04 | grad norm 2.219 | 11 ms | 11313 tok/s | MFU "
      "0.0%");
  ASSERT_TRUE(step);
  EXPECT_EQ(step->kind, JobLine::Kind::Step);
  EXPECT_EQ(step->step, 7);

  auto resumed = read_job_line(
      "resumed from ck/step-0000012 (step 12, saved under dp 2 x tp 2 x pp 1; verified and "
      "loaded in 0.03 s)");
  ASSERT_TRUE(resumed);
  EXPECT_EQ(resumed->kind, JobLine::Kind::Resumed);
  EXPECT_EQ(resumed->step, 12);
  EXPECT_DOUBLE_EQ(resumed->load_s, 0.03);

  auto planted = read_job_line("parallm: planted stop on rank 2 after step 11");
  ASSERT_TRUE(planted);
  EXPECT_EQ(planted->kind, JobLine::Kind::Planted);
  EXPECT_EQ(planted->rank, 2);
  EXPECT_EQ(planted->step, 11);

  auto error = read_job_line("parallm: rank 3 of 4: error: planted failure: an error after step 14");
  ASSERT_TRUE(error);
  EXPECT_EQ(error->kind, JobLine::Kind::RankError);
  EXPECT_EQ(error->rank, 3);
  EXPECT_EQ(error->text, "error: planted failure: an error after step 14");

  auto watchdog = read_job_line(
      "parallm: fatal: a pending operation was dropped: all_reduce #11 on group 'dp[0]' (rank 1 "
      "of 2) did not complete within 3 s: a peer rank may have died, hung, or called a "
      "different collective (set check_collectives to compare calls)");
  ASSERT_TRUE(watchdog);
  EXPECT_EQ(watchdog->kind, JobLine::Kind::Watchdog);
  EXPECT_EQ(watchdog->rank, 1);
  EXPECT_EQ(watchdog->world, 2);

  auto died = read_job_line(
      "mpirun noticed that process rank 1 with PID 0 on node vm exited on signal 9 (Killed).");
  ASSERT_TRUE(died);
  EXPECT_EQ(died->kind, JobLine::Kind::RankDied);
  EXPECT_EQ(died->rank, 1);
  EXPECT_EQ(died->text, "exited on signal 9 (Killed) on vm");
}

TEST(JobLog, OtherLinesAreNotFacts) {
  EXPECT_FALSE(read_job_line("data parallel: dp 4, allreduce, ZeRO stage 0"));
  EXPECT_FALSE(read_job_line("saved checkpoint ck/step-0000004 (0.4 MB in 0.01 s)"));
  EXPECT_FALSE(read_job_line(""));
}

}  // namespace
}  // namespace parallm
