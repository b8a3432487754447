// DataLoader: windows cover the stream, targets are inputs shifted by one,
// the order depends only on (seed, epoch), shards concatenate seamlessly.
#include "data/data_loader.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <numeric>
#include <set>

#include "base/error.h"
#include "common/test_util.h"

namespace parallm {
namespace {

namespace fs = std::filesystem;

using testing::TempDir;

// Token i of the stream is i + 1000 * (i % 3), so values differ from indices
// and are easy to predict.
int32_t stream_token(int64_t i) { return static_cast<int32_t>(i + 1000 * (i % 3)); }

std::vector<int32_t> stream(int64_t begin, int64_t end) {
  std::vector<int32_t> t;
  for (int64_t i = begin; i < end; ++i) t.push_back(stream_token(i));
  return t;
}

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

std::vector<int64_t> order(const DataLoader& dl, int64_t first, int64_t n) {
  std::vector<int64_t> w;
  for (int64_t s = first; s < first + n; ++s) w.push_back(dl.window_of_sample(s));
  return w;
}

TEST(PermuteIndex, IsABijectionForManySizes) {
  for (int64_t n : {1, 2, 3, 4, 5, 7, 16, 17, 100, 1000, 4097}) {
    for (uint64_t key : {0ull, 1ull, 0xDEADBEEFull}) {
      std::vector<char> seen(static_cast<size_t>(n), 0);
      for (int64_t i = 0; i < n; ++i) {
        int64_t j = permute_index(i, n, key);
        ASSERT_TRUE(j >= 0 && j < n) << n;
        ASSERT_FALSE(seen[static_cast<size_t>(j)]) << "n=" << n << " i=" << i;
        seen[static_cast<size_t>(j)] = 1;
      }
    }
  }
}

TEST(PermuteIndex, LooksShuffled) {
  // Over many keys, where index 0 lands is close to uniform over 10 slots, and
  // a single permutation of 1000 has few fixed points (about 1 expected).
  std::vector<int> hist(10, 0);
  for (uint64_t key = 0; key < 10000; ++key) ++hist[static_cast<size_t>(permute_index(0, 10, key))];
  for (int h : hist) EXPECT_NEAR(h, 1000, 150);
  int fixed = 0;
  for (int64_t i = 0; i < 1000; ++i) fixed += permute_index(i, 1000, 7) == i;
  EXPECT_LT(fixed, 8);
}

TEST(DataLoader, SequentialWindowsCoverTheStream) {
  TempDir d;
  write_token_shard(d.file("a.bin"), stream(0, 101));
  DataLoader dl({d.file("a.bin")}, 10, 0, /*shuffle=*/false);
  EXPECT_EQ(dl.num_tokens(), 101);
  EXPECT_EQ(dl.num_windows(), 10);  // (101 - 1) / 10
  std::vector<int32_t> x(10), y(10);
  for (int64_t s = 0; s < 25; ++s) {  // across 2.5 epochs
    dl.fill_window(s, x.data(), y.data());
    int64_t w = s % 10;
    EXPECT_EQ(x, stream(w * 10, w * 10 + 10)) << s;
    EXPECT_EQ(y, stream(w * 10 + 1, w * 10 + 11)) << s;  // shifted by one
  }
}

TEST(DataLoader, ExactlyTPlusOneTokensIsOneWindow) {
  TempDir d;
  write_token_shard(d.file("a.bin"), stream(0, 9));
  DataLoader dl({d.file("a.bin")}, 8, 3, true);
  EXPECT_EQ(dl.num_windows(), 1);
  EXPECT_EQ(dl.window_of_sample(5), 0);
}

TEST(DataLoader, ShuffledOrderIsAPermutationPerEpochKeyedBySeed) {
  TempDir d;
  write_token_shard(d.file("a.bin"), stream(0, 4 * 200 + 1));
  DataLoader a({d.file("a.bin")}, 4, 1234, true);
  ASSERT_EQ(a.num_windows(), 200);
  std::vector<int64_t> e0 = order(a, 0, 200), e1 = order(a, 200, 200);
  std::vector<int64_t> all(200);
  std::iota(all.begin(), all.end(), 0);
  for (auto e : {e0, e1}) {
    std::sort(e.begin(), e.end());
    EXPECT_EQ(e, all);  // every window exactly once per epoch
  }
  EXPECT_NE(e0, e1);  // a fresh order each epoch
  EXPECT_NE(e0, all);

  DataLoader same({d.file("a.bin")}, 4, 1234, true);
  EXPECT_EQ(order(same, 0, 400), order(a, 0, 400));
  DataLoader other({d.file("a.bin")}, 4, 1235, true);
  EXPECT_NE(order(other, 0, 200), e0);
}

TEST(DataLoader, OrderIsPinnedAcrossMachines) {
  // These values follow from mix64/stream_key alone; a change here changes
  // every run's data order, so it must be deliberate.
  TempDir d;
  write_token_shard(d.file("a.bin"), stream(0, 1001));
  DataLoader dl({d.file("a.bin")}, 1, 42, true);
  EXPECT_EQ(order(dl, 0, 8), (std::vector<int64_t>{835, 107, 662, 278, 624, 570, 608, 103}));
}

TEST(DataLoader, SamplesDoNotDependOnHowTheyAreRequested) {
  TempDir d;
  write_token_shard(d.file("a.bin"), stream(0, 16 * 50 + 5));
  const int64_t T = 16, B = 8;
  DataLoader dl({d.file("a.bin")}, T, 99, true);
  std::vector<int32_t> bx(B * T), by(B * T);
  dl.fill_batch(45, B, bx.data(), by.data());  // crosses the epoch boundary at 50
  // Two "ranks", each with its own loader, taking alternate rows in reverse.
  DataLoader r0({d.file("a.bin")}, T, 99, true), r1({d.file("a.bin")}, T, 99, true);
  std::vector<int32_t> x(T), y(T);
  for (int64_t b = B - 1; b >= 0; --b) {
    (b % 2 ? r1 : r0).fill_window(45 + b, x.data(), y.data());
    EXPECT_TRUE(std::equal(x.begin(), x.end(), bx.begin() + b * T)) << b;
    EXPECT_TRUE(std::equal(y.begin(), y.end(), by.begin() + b * T)) << b;
    EXPECT_TRUE(std::equal(x.begin() + 1, x.end(), y.begin()));  // shifted by one
  }
}

TEST(DataLoader, ShardsConcatenateIntoOneStream) {
  TempDir d;
  const int64_t n = 7 * 30 + 3;
  write_token_shard(d.file("whole.bin"), stream(0, n));
  // Uneven cuts, an empty shard, and mixed formats; windows straddle the cuts.
  write_token_shard(d.file("part_0.bin"), stream(0, 11));
  write_token_shard(d.file("part_1.bin"), stream(11, 11));
  write_token_shard(d.file("part_2.bin"), stream(11, 100), ShardFormat::U32);
  write_token_shard(d.file("part_3.bin"), stream(100, n));
  DataLoader whole({d.file("whole.bin")}, 7, 5, true);
  DataLoader parts({d.file("part_*.bin")}, 7, 5, true);  // glob, sorted
  ASSERT_EQ(parts.files().size(), 4u);
  EXPECT_EQ(parts.files()[2], d.file("part_2.bin"));
  EXPECT_EQ(parts.num_tokens(), n);
  EXPECT_EQ(parts.num_windows(), whole.num_windows());
  std::vector<int32_t> a(7 * 60), b(7 * 60), c(7 * 60), e(7 * 60);
  whole.fill_batch(0, 60, a.data(), b.data());
  parts.fill_batch(0, 60, c.data(), e.data());
  EXPECT_EQ(a, c);
  EXPECT_EQ(b, e);
  std::vector<int32_t> all(static_cast<size_t>(n));
  parts.read_tokens(0, n, all.data());
  EXPECT_EQ(all, stream(0, n));
  EXPECT_EQ(parts.max_token(), stream_token(n - 1));  // n - 1 = 212 has i % 3 == 2
}

TEST(DataLoader, ErrorsNameFilesAndNumbers) {
  TempDir d;
  write_token_shard(d.file("a.bin"), stream(0, 6));
  write_token_shard(d.file("b.bin"), stream(6, 10));
  std::string m = message_of([&] { DataLoader({d.file("a.bin"), d.file("b.bin")}, 10, 0, false); });
  EXPECT_NE(
      m.find("data has 10 tokens in total (" + d.file("a.bin") + ", " + d.file("b.bin") + ")"),
      std::string::npos)
      << m;
  EXPECT_NE(m.find("seq_len 10 needs at least seq_len + 1 = 11 tokens"), std::string::npos) << m;

  m = message_of([&] { DataLoader({d.file("nope_*.bin")}, 4, 0, false); });
  EXPECT_NE(m.find("data pattern " + d.file("nope_*.bin") + " matches no files"), std::string::npos)
      << m;
  m = message_of([&] { DataLoader({d.file("missing.bin")}, 4, 0, false); });
  EXPECT_NE(m.find(d.file("missing.bin")), std::string::npos) << m;
  m = message_of([&] { DataLoader({d.file("a.bin")}, 0, 0, false); });
  EXPECT_NE(m.find("seq_len must be >= 1 (got 0)"), std::string::npos) << m;

  DataLoader dl({d.file("a.bin"), d.file("b.bin")}, 4, 0, false);
  EXPECT_EQ(dl.max_token(), stream_token(8));  // 8 + 2000
  dl.validate_vocab(2009);
  m = message_of([&] { dl.validate_vocab(2008); });
  EXPECT_NE(m.find("data file " + d.file("b.bin") + ": token id 2008 at position 2"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("(vocab_size 2008)"), std::string::npos) << m;
  m = message_of([&] { dl.validate_vocab(1001); });
  EXPECT_NE(m.find("data file " + d.file("a.bin") + ": token id 1001 at position 1"),
            std::string::npos)
      << m;
}

}  // namespace
}  // namespace parallm
