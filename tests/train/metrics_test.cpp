// MetricsWriter: a new run starts a new file; a resumed run keeps the
// records of the steps before its first step and drops the ones it repeats
// (written after the checkpoint by the interrupted run), so the file reads
// as one uninterrupted run.
#include "train/metrics.h"

#include <gtest/gtest.h>

#include <fstream>
#include <vector>

#include "common/test_util.h"

namespace parallm {
namespace {

std::vector<int64_t> steps_in(const std::string& path) {
  std::vector<int64_t> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);)
    out.push_back(nlohmann::json::parse(line).at("step").get<int64_t>());
  return out;
}

TEST(MetricsWriter, ResumeKeepsEarlierStepsAndDropsRepeatedOnes) {
  testing::TempDir dir;
  const std::string path = (dir.path / "m.jsonl").string();
  {
    MetricsWriter w(path);
    for (int64_t s = 0; s < 13; ++s) w.write({{"step", s}, {"loss", 1.0}});
  }
  {
    MetricsWriter w(path, 10);  // resumed from the step-10 checkpoint
    for (int64_t s = 10; s < 15; ++s) w.write({{"step", s}, {"loss", 2.0}});
  }
  std::vector<int64_t> want;
  for (int64_t s = 0; s < 15; ++s) want.push_back(s);
  EXPECT_EQ(steps_in(path), want);
  {
    MetricsWriter w(path);  // a new run
    w.write({{"step", 0}});
  }
  EXPECT_EQ(steps_in(path), std::vector<int64_t>{0});
}

}  // namespace
}  // namespace parallm
