// The per-machine GEMM peak cache keeps the best value per key, survives a
// missing or corrupt file, and never lowers what it holds.
#include "train/gemm_peak_cache.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace parallm {
namespace {

TEST(GemmPeakCache, KeepsTheBestPerKey) {
  const auto dir = std::filesystem::temp_directory_path() / "parallm_peak_cache_test";
  std::filesystem::remove_all(dir);
  const GemmPeakCache cache((dir / "sub" / "gemm_peak.json").string());
  EXPECT_EQ(cache.best("cpu | 2 threads | fp32"), 0.0);  // no file yet
  ASSERT_TRUE(cache.record("cpu | 2 threads | fp32", 5e10));
  ASSERT_TRUE(cache.record("cpu | 2 threads | fp32", 3e10));  // a disturbed run: kept 5e10
  ASSERT_TRUE(cache.record("cpu | 1 threads | fp32", 2e10));
  EXPECT_EQ(cache.best("cpu | 2 threads | fp32"), 5e10);
  EXPECT_EQ(cache.best("cpu | 1 threads | fp32"), 2e10);
  ASSERT_TRUE(cache.record("cpu | 2 threads | fp32", 6e10));
  EXPECT_EQ(cache.best("cpu | 2 threads | fp32"), 6e10);
  std::ofstream(cache.path()) << "{ not json";
  EXPECT_EQ(cache.best("cpu | 2 threads | fp32"), 0.0);  // corrupt: ignored, then replaced
  ASSERT_TRUE(cache.record("cpu | 2 threads | fp32", 1e10));
  EXPECT_EQ(cache.best("cpu | 2 threads | fp32"), 1e10);
  std::filesystem::remove_all(dir);
}

TEST(GemmPeakCache, CpuModelNamed) { EXPECT_FALSE(cpu_model_name().empty()); }

}  // namespace
}  // namespace parallm
