// The wait for the last rank at a collective (plan/arrival_wait.h): the
// expected maximum of n standard normals against its known values, the
// square-root growth with the work before the collective, and the fit that
// calibrate uses recovering a jitter from waits it generated.
#include "plan/arrival_wait.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace parallm {
namespace {

TEST(ArrivalWait, ExpectedMaxOfNormalsMatchesTheKnownValues) {
  EXPECT_EQ(expected_max_std_normal(1), 0.0);
  EXPECT_NEAR(expected_max_std_normal(2), 1.0 / std::sqrt(M_PI), 1e-7);  // closed form
  EXPECT_NEAR(expected_max_std_normal(3), 1.5 / std::sqrt(M_PI), 1e-7);  // closed form
  EXPECT_NEAR(expected_max_std_normal(4), 1.029375, 1e-5);               // tabulated
  EXPECT_NEAR(expected_max_std_normal(8), 1.423600, 1e-5);
  EXPECT_NEAR(expected_max_std_normal(1000), 3.241436, 1e-5);
}

TEST(ArrivalWait, GrowsWithTheSquareRootOfTheWorkAndTheGroup) {
  const double j = 0.02;
  EXPECT_NEAR(arrival_wait_s(j, 0.01, 2), 0.02 * 0.1 / std::sqrt(M_PI), 1e-9);
  EXPECT_NEAR(arrival_wait_s(j, 0.04, 2), 2 * arrival_wait_s(j, 0.01, 2), 1e-12);
  EXPECT_GT(arrival_wait_s(j, 0.01, 8), arrival_wait_s(j, 0.01, 2));
  EXPECT_EQ(arrival_wait_s(j, 0.01, 1), 0.0);  // alone: nobody to wait for
  EXPECT_EQ(arrival_wait_s(0.0, 0.01, 8), 0.0);
  EXPECT_EQ(arrival_wait_s(j, 0.0, 8), 0.0);
}

TEST(ArrivalWait, FitRecoversTheJitterThatMadeTheWaits) {
  const std::vector<double> works = {0.002, 0.005, 0.01, 0.02, 0.05};
  std::vector<double> waits;
  for (double w : works) waits.push_back(arrival_wait_s(0.023, w, 2));
  EXPECT_NEAR(fit_arrival_jitter(works, waits, 2), 0.023, 1e-12);
  // Noise around it: still near; waits that are negative on the whole
  // (collectives faster after work than back to back) give no jitter.
  waits = {1.2e-4, 1.1e-3, 1.5e-3, 1.9e-3, 2.9e-3};
  EXPECT_NEAR(fit_arrival_jitter(works, waits, 2), 0.023, 0.003);
  const std::vector<double> negative = {-1e-4, -2e-4, 0, -1e-4, 0};
  EXPECT_EQ(fit_arrival_jitter(works, negative, 2), 0.0);
}

}  // namespace
}  // namespace parallm
