// Data blends: Megatron's `weight path` syntax, the greedy schedule (shares
// follow the weights, each source's samples counted in order, the result
// independent of which samples were asked for first), and a blended
// DataLoader reading each source in that source's own order.
#include "data/data_blend.h"

#include <gtest/gtest.h>

#include <cmath>

#include "common/test_util.h"
#include "data/data_loader.h"
#include "data/megatron_dataset.h"
#include "data/token_shard.h"

namespace parallm {
namespace {

using testing::error_of;
using testing::TempDir;

TEST(ParseDataSpec, PathsAndBlends) {
  DataSpec plain = parse_data_spec({"a.bin", "b"});
  EXPECT_FALSE(plain.blended());
  ASSERT_EQ(plain.sources.size(), 1u);
  EXPECT_EQ(plain.sources[0], (std::vector<std::string>{"a.bin", "b"}));

  DataSpec blend = parse_data_spec({"0.7", "A", "0.3", "B"});
  ASSERT_TRUE(blend.blended());
  ASSERT_EQ(blend.sources.size(), 2u);
  EXPECT_EQ(blend.sources[1], (std::vector<std::string>{"B"}));
  EXPECT_DOUBLE_EQ(blend.weights[0], 0.7);
  EXPECT_DOUBLE_EQ(blend.weights[1], 0.3);

  DataSpec unnormalised = parse_data_spec({"3", "A", "1", "B"});
  EXPECT_DOUBLE_EQ(unnormalised.weights[0], 0.75);
  EXPECT_DOUBLE_EQ(unnormalised.weights[1], 0.25);
}

TEST(ParseDataSpec, MalformedBlendsNameTheEntry) {
  EXPECT_NE(error_of([] {
              parse_data_spec({"0.7", "A", "0.3"});
            }).find("weight/path pairs"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              parse_data_spec({"0.7", "A", "B", "C"});
            }).find("entry 3 ('B') should be a weight"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              parse_data_spec({"0.7", "A", "0", "B"});
            }).find("weight 0 for B must be a positive number"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              parse_data_spec({"0.7", "0.3"});
            }).find("should be a data path"),
            std::string::npos);
}

TEST(BlendSchedule, FollowsTheWeightsAndCountsEachSourceInOrder) {
  BlendSchedule s({0.7, 0.2, 0.1});
  std::vector<int64_t> next(3, 0);
  const int64_t n = 10000;
  for (int64_t i = 0; i < n; ++i) {
    const BlendSchedule::Pick p = s.pick(i);
    ASSERT_EQ(p.source_sample, next[static_cast<size_t>(p.source)]) << i;
    ++next[static_cast<size_t>(p.source)];
  }
  // The greedy keeps every count within one sample of its share.
  EXPECT_LE(std::abs(static_cast<double>(next[0]) - 0.7 * n), 1.0);
  EXPECT_LE(std::abs(static_cast<double>(next[1]) - 0.2 * n), 1.0);
  EXPECT_LE(std::abs(static_cast<double>(next[2]) - 0.1 * n), 1.0);
  // Megatron's rule at the start: sample 0 and 1 both compare w * 1.
  EXPECT_EQ(s.pick(0).source, 0);
  EXPECT_EQ(s.pick(1).source, 1);
  EXPECT_EQ(s.pick(2).source, 0);
}

TEST(BlendSchedule, DoesNotDependOnTheOrderOfQueries) {
  BlendSchedule forward({0.5, 0.5}), backward({0.5, 0.5});
  std::vector<BlendSchedule::Pick> late;
  for (int64_t i = 9999; i >= 0; i -= 7) late.push_back(backward.pick(i));
  size_t k = 0;
  for (int64_t i = 9999; i >= 0; i -= 7, ++k) {
    EXPECT_EQ(forward.pick(i).source, late[k].source);
    EXPECT_EQ(forward.pick(i).source_sample, late[k].source_sample);
  }
}

// Source A holds tokens 1000 + i, source B 5000 + i, so a window tells its
// source and position apart.
TEST(BlendedDataLoader, ReadsEachSourceInItsOwnOrder) {
  TempDir d;
  std::vector<int32_t> a(81), b(41);
  for (int i = 0; i < 81; ++i) a[static_cast<size_t>(i)] = 1000 + i;
  for (int i = 0; i < 41; ++i) b[static_cast<size_t>(i)] = 5000 + i;
  write_token_shard(d.file("a.bin"), a);
  const std::vector<int64_t> offs = {0, 15, 41};
  write_megatron_dataset(d.file("b"), b, offs, MegatronDType::U16);
  const int64_t T = 4;
  DataLoader blend({"0.75", d.file("a.bin"), "0.25", d.file("b")}, T, 7, true);
  ASSERT_TRUE(blend.blended());
  EXPECT_EQ(blend.num_windows(), 20 + 10);
  EXPECT_EQ(blend.files().size(), 2u);
  DataLoader only_a({d.file("a.bin")}, T, 7, true);
  BlendSchedule sched({0.75, 0.25});
  std::vector<int32_t> in(T), tg(T);
  int64_t from_b = 0;
  for (int64_t s = 0; s < 200; ++s) {
    blend.fill_window(s, in.data(), tg.data());
    const BlendSchedule::Pick p = sched.pick(s);
    const DataLoader::SampleRef r = blend.locate(s);
    ASSERT_EQ(r.stream, p.source);
    const int32_t base = p.source == 0 ? 1000 : 5000;
    EXPECT_EQ(in[0], base + r.window * T) << s;
    for (int64_t t = 0; t < T; ++t) EXPECT_EQ(tg[t], in[t] + 1);
    from_b += p.source;
  }
  EXPECT_EQ(from_b, 50);
  // Each source visits all its windows once per epoch of its own samples.
  std::vector<int> seen(10, 0);
  for (int64_t s = 0, k = 0; k < 10; ++s) {
    const DataLoader::SampleRef r = blend.locate(s);
    if (r.stream == 1) {
      ++seen[static_cast<size_t>(r.window)];
      ++k;
    }
  }
  EXPECT_EQ(seen, std::vector<int>(10, 1));
  // A blend's source order is keyed apart from a plain run's.
  int same = 0;
  for (int64_t s = 0; s < 20; ++s) same += only_a.window_of_sample(s) == blend.locate(s).window;
  EXPECT_LT(same, 20);
}

TEST(BlendedDataLoader, EachSourceNeedsOneWindow) {
  TempDir d;
  write_token_shard(d.file("a.bin"), std::vector<int32_t>(100, 1));
  write_token_shard(d.file("b.bin"), std::vector<int32_t>(5, 1));
  const std::string e = error_of([&] {
    DataLoader dl({"1", d.file("a.bin"), "1", d.file("b.bin")}, 8, 0, true);
  });
  EXPECT_NE(e.find("in each blended source"), std::string::npos) << e;
  EXPECT_NE(e.find("b.bin"), std::string::npos) << e;
}

TEST(DataLoader, ReadsMegatronDatasetsAlongsideShards) {
  TempDir d;
  std::vector<int32_t> toks;
  for (int i = 0; i < 30; ++i) toks.push_back(i);
  write_token_shard(d.file("s.bin"), std::vector<int32_t>(toks.begin(), toks.begin() + 10));
  const std::vector<int64_t> offs = {0, 5, 20};
  write_megatron_dataset(d.file("m"), std::span<const int32_t>(toks).subspan(10), offs,
                         MegatronDType::I32);
  DataLoader dl({d.file("s.bin"), d.file("m")}, 6, 0, false);
  EXPECT_EQ(dl.num_tokens(), 30);
  std::vector<int32_t> all(30);
  dl.read_tokens(0, 30, all.data());
  EXPECT_EQ(all, toks);
  std::vector<int32_t> in(6), tg(6);
  dl.fill_window(1, in.data(), tg.data());  // crosses from the shard into the dataset
  EXPECT_EQ(in, (std::vector<int32_t>{6, 7, 8, 9, 10, 11}));
  EXPECT_EQ(tg[5], 12);
  EXPECT_EQ(dl.max_token(), 29);
  const std::string e = error_of([&] { dl.validate_vocab(25); });
  EXPECT_NE(e.find("token id 25 at position 15"), std::string::npos) << e;
  EXPECT_NE(e.find(d.file("m")), std::string::npos) << e;
}

}  // namespace
}  // namespace parallm
