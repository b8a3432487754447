// Megatron's list expressions for --moe-layer-freq (model/moe/moe_layer_freq.h):
// the patterns Megatron's docs use, Python's rules for + and *, and one
// message, naming the text, for each kind of bad input.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/test_util.h"
#include "model/moe/moe_config.h"
#include "model/moe/moe_layer_freq.h"

namespace parallm {
namespace {

std::vector<int> rep(std::vector<int> unit, int times) {
  std::vector<int> out;
  for (int t = 0; t < times; ++t) out.insert(out.end(), unit.begin(), unit.end());
  return out;
}

TEST(MoeLayerFreq, ListExpressions) {
  EXPECT_EQ(parse_moe_layer_freq_list("([1]*3+[0]*1)*3"), rep({1, 1, 1, 0}, 3));
  std::vector<int> deepseek = {0};
  for (int i = 0; i < 23; ++i) deepseek.push_back(1);
  EXPECT_EQ(parse_moe_layer_freq_list("[0]+[1]*23"), deepseek);
  EXPECT_EQ(parse_moe_layer_freq_list(" [1, 0,1] "), (std::vector<int>{1, 0, 1}));
  EXPECT_EQ(parse_moe_layer_freq_list("2*[0,1]"), (std::vector<int>{0, 1, 0, 1}));
  EXPECT_EQ(parse_moe_layer_freq_list("[1]*(1+2)"), (std::vector<int>{1, 1, 1}));
  EXPECT_EQ(parse_moe_layer_freq_list("[1]*2*2+[0]*0"), (std::vector<int>{1, 1, 1, 1}));
  EXPECT_EQ(parse_moe_layer_freq_list("[1,]"), (std::vector<int>{1}));  // as in Python
  EXPECT_EQ(parse_moe_layer_freq_list("[(1)]+[0*5]"), (std::vector<int>{1, 0}));
}

TEST(MoeLayerFreq, BadTextHasOneClearMessage) {
  const std::string tail = " (expected a list expression like ([1]*3+[0]*1)*3)";
  const auto msg = [&](const std::string& text, const std::string& what, int pos) {
    return "moe layer frequency '" + text + "': " + what + " at position " + std::to_string(pos) +
           tail;
  };
  const auto err = [](const std::string& t) {
    return testing::error_of([&] { parse_moe_layer_freq_list(t); });
  };
  EXPECT_EQ(err("[1,0"), msg("[1,0", "a missing ']' or ','", 4));
  EXPECT_EQ(err("([1]*3"), msg("([1]*3", "a missing ')'", 6));
  EXPECT_EQ(err("[1]+1"), msg("[1]+1", "a number and a list cannot be added", 5));
  EXPECT_EQ(err("[1]*[2]"), msg("[1]*[2]", "two lists cannot be multiplied", 7));
  EXPECT_EQ(err("[[1]]"), msg("[[1]]", "a list inside a list", 4));
  EXPECT_EQ(err("[1]*x"), msg("[1]*x", "unexpected 'x'", 4));
  EXPECT_EQ(err("[1]*"), msg("[1]*", "an unfinished expression", 4));
  EXPECT_EQ(err("[1] 2"), msg("[1] 2", "unexpected '2'", 4));
  EXPECT_EQ(err("[]"), msg("[]", "the expression gives an empty list", 2));
  EXPECT_EQ(err("[1]*-1"), msg("[1]*-1", "unexpected '-'", 4));
  EXPECT_EQ(err("[1]*99999999"), msg("[1]*99999999", "a number that large", 11));
  EXPECT_EQ(err("[1,2]"),
            "moe layer frequency '[1,2]': entries must be 0 (dense) or 1 (MoE); layer 1 has 2");
}

TEST(MoeLayerFreq, FlagTextSetsOneForm) {
  MoeConfig m;
  m.set_layer_freq("([1]*1+[0]*1)*2");
  EXPECT_EQ(m.layer_pattern, (std::vector<int>{1, 0, 1, 0}));
  m.set_layer_freq(" 3 ");  // the integer form clears the list
  EXPECT_EQ(m.layer_freq, 3);
  EXPECT_TRUE(m.layer_pattern.empty());
  EXPECT_EQ(testing::error_of([&] { m.set_layer_freq("2x"); }),
            "moe layer frequency '2x' is neither an integer nor a list like [1,0,1,0] or "
            "([1]*3+[0])*2");
}

}  // namespace
}  // namespace parallm
