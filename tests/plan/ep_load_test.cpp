// The planner's expert-load input: `--moe-ep-load` items and a training
// run's metrics file give the per-ep busiest-rank load, with clear errors.
#include "plan/ep_load.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "common/test_util.h"

namespace parallm {
namespace {

using testing::error_of;

TEST(EpLoad, ParsesItemsAndNamesBadOnes) {
  const auto m = parse_ep_load({"2=1.25", "4=1.5"});
  ASSERT_EQ(m.size(), 2u);
  EXPECT_DOUBLE_EQ(m.at(2), 1.25);
  EXPECT_DOUBLE_EQ(m.at(4), 1.5);
  EXPECT_NE(error_of([] { parse_ep_load({"2:1.3"}); }).find("expected ep=load"), std::string::npos);
  EXPECT_NE(error_of([] { parse_ep_load({"2=x"}); }).find("'2=x'"), std::string::npos);
  EXPECT_NE(error_of([] { parse_ep_load({"1=1.3"}); }).find("at least 2"), std::string::npos);
  EXPECT_NE(error_of([] { parse_ep_load({"2=0.9"}); }).find(">= 1"), std::string::npos);
}

TEST(EpLoad, MedianOfAMetricsFileAfterTheWarmup) {
  const auto path = std::filesystem::temp_directory_path() / "parallm_ep_load_metrics.jsonl";
  {
    std::ofstream f(path);
    f << R"({"step":1,"moe":{"ep_max_load":{"2":9.0,"4":9.0}}})"
      << "\n";
    f << R"({"step":2,"moe":{"ep_max_load":{"2":1.2,"4":1.6}}})"
      << "\n";
    f << R"({"step":3,"moe":{"ep_max_load":{"2":1.4,"4":1.5}}})"
      << "\n";
    f << R"({"step":4,"moe":{"ep_max_load":{"2":1.3,"4":1.9}}})"
      << "\n";
  }
  const auto m = read_ep_load(path.string(), 1);
  EXPECT_DOUBLE_EQ(m.at(2), 1.3);
  EXPECT_DOUBLE_EQ(m.at(4), 1.6);
  EXPECT_NE(error_of([&] { read_ep_load(path.string(), 4); }).find("no record after the first 4"),
            std::string::npos);
  {
    std::ofstream f(path);
    f << R"({"step":1,"loss":2.0})"
      << "\n"
      << "not json\n";
  }
  EXPECT_NE(error_of([&] { read_ep_load(path.string(), 0); }).find("line 2: not JSON"),
            std::string::npos);
  std::filesystem::remove(path);
  EXPECT_NE(error_of([&] { read_ep_load(path.string(), 0); }).find("cannot open"),
            std::string::npos);
}

}  // namespace
}  // namespace parallm
