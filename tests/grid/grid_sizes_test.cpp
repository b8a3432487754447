// Grid validation: every violated constraint is reported with its values,
// before any grid exists; and the world size resolution of `parallm grid`.
#include "grid/grid_sizes.h"

#include <gtest/gtest.h>

#include <functional>

#include "base/error.h"
#include "common/test_util.h"
#include "grid/grid_request.h"
#include "grid/rank_grid.h"

namespace parallm {
namespace {

using testing::error_of;

TEST(GridSizes, WorldMustEqualProduct) {
  EXPECT_EQ(error_of([] { RankGrid(GridSizes{.tp = 2, .dp = 2, .pp = 4}, 8); }),
            "world size (8) is not equal to tp (2) x cp (1) x dp (2) x pp (4) = 16");
}

TEST(GridSizes, EpMustDivideDpTimesCp) {
  EXPECT_EQ(error_of([] { RankGrid(GridSizes{.cp = 2, .dp = 2, .ep = 3}, 4); }),
            "ep (3) does not divide dp (2) x cp (2) = 4");
  EXPECT_EQ(error_of([] { RankGrid(GridSizes{.tp = 2, .dp = 2, .ep = 4}); }),
            "ep (4) does not divide dp (2) x cp (1) = 2");
}

TEST(GridSizes, SizesMustBePositive) {
  EXPECT_EQ(error_of([] { RankGrid(GridSizes{.tp = 0}); }), "tp (0) must be at least 1");
  EXPECT_EQ(error_of([] { RankGrid(GridSizes{.cp = -1}, 1); }), "cp (-1) must be at least 1");
  EXPECT_EQ(error_of([] { RankGrid(GridSizes{.dp = 0}, 1); }), "dp (0) must be at least 1");
  EXPECT_EQ(error_of([] { RankGrid(GridSizes{.pp = 0}, 1); }), "pp (0) must be at least 1");
  EXPECT_EQ(error_of([] { RankGrid(GridSizes{.ep = 0}, 1); }), "ep (0) must be at least 1");
  EXPECT_EQ(error_of([] { RankGrid(GridSizes{}, 0); }), "world size (0) must be at least 1");
}

TEST(GridSizes, AllViolationsAreReportedTogether) {
  EXPECT_EQ(grid_size_violations(GridSizes{.tp = 2, .cp = 2, .dp = 2, .ep = 3}, 6),
            (std::vector<std::string>{
                "world size (6) is not equal to tp (2) x cp (2) x dp (2) x pp (1) = 8",
                "ep (3) does not divide dp (2) x cp (2) = 4"}));
  EXPECT_EQ(error_of([] { check_grid_sizes(GridSizes{.tp = 2, .cp = 2, .dp = 2, .ep = 3}, 6); }),
            "world size (6) is not equal to tp (2) x cp (2) x dp (2) x pp (1) = 8; "
            "ep (3) does not divide dp (2) x cp (2) = 4");
  EXPECT_EQ(error_of([] { check_grid_sizes(GridSizes{.tp = 0, .pp = 0}, 4); }),
            "tp (0) must be at least 1; pp (0) must be at least 1");
  EXPECT_TRUE(
      grid_size_violations(GridSizes{.tp = 2, .cp = 2, .dp = 3, .pp = 2, .ep = 6}, 24).empty());
}

TEST(GridSizes, HugeProductsDoNotOverflow) {
  EXPECT_EQ((GridSizes{.tp = 65536, .dp = 65536}.world_size()), 4294967296LL);
  EXPECT_EQ(error_of([] { RankGrid(GridSizes{.tp = 65536, .dp = 65536}); }),
            "tp (65536) x cp (1) x dp (65536) x pp (1) = 4294967296 exceeds the largest world size "
            "(2147483647)");
  EXPECT_EQ(
      error_of([] { RankGrid(GridSizes{.tp = 65536, .dp = 65536}, 16); }),
      "world size (16) is not equal to tp (65536) x cp (1) x dp (65536) x pp (1) = 4294967296");
}

TEST(GridSizes, DeriveDpLikeMegatron) {
  EXPECT_EQ(derive_dp(GridSizes{.tp = 2, .pp = 4}, 16), 2);
  EXPECT_EQ(derive_dp(GridSizes{.tp = 2, .cp = 2, .pp = 2}, 32), 4);
  EXPECT_EQ(error_of([] { derive_dp(GridSizes{.tp = 2, .pp = 3}, 16); }),
            "world size (16) is not divisible by tp (2) x cp (1) x pp (3) = 6");
}

TEST(GridRequest, WorldComesFromFlagThenLauncherThenProduct) {
  GridRequest req{.sizes = {.tp = 2, .dp = 2, .pp = 4}};
  EXPECT_EQ(resolve_grid(req).world_size(), 16);
  req.world_size = 8;
  EXPECT_EQ(error_of([&] { resolve_grid(req); }),
            "world size (8) is not equal to tp (2) x cp (1) x dp (2) x pp (4) = 16");
  req.dp_given = false;  // dp from the world: 8 / (2 x 4) = 1
  EXPECT_EQ(resolve_grid(req).sizes().dp, 1);
  req.world_size.reset();
  req.launch_world_size = 32;
  EXPECT_EQ(resolve_grid(req).sizes().dp, 4);
  req.dp_given = true;
  EXPECT_EQ(error_of([&] { resolve_grid(req); }),
            "world size (32) is not equal to tp (2) x cp (1) x dp (2) x pp (4) = 16");
}

}  // namespace
}  // namespace parallm
