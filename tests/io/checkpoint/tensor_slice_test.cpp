// TensorSlice geometry: pieces cut from a tensor by tp boxes and ZeRO flat
// ranges of any alignment reassemble it exactly, and copy_overlap moves
// exactly the shared elements between two different cuttings.
#include "io/checkpoint/tensor_slice.h"

#include <gtest/gtest.h>

#include <numeric>

#include "base/error.h"

namespace parallm {
namespace {

// Pieces of a (rows, cols) tensor: `parts` boxes along shard_dim, each box
// cut into flat ranges at the given fractions.
std::vector<TensorSlice> cut(int64_t rows, int64_t cols, int shard_dim, int parts,
                             std::vector<double> fractions) {
  std::vector<TensorSlice> out;
  for (int p = 0; p < parts; ++p) {
    std::vector<int64_t> box = {rows, cols};
    box[static_cast<size_t>(shard_dim)] /= parts;
    TensorSlice s =
        TensorSlice::of_box({rows, cols}, box, shard_dim, p * box[static_cast<size_t>(shard_dim)]);
    int64_t prev = 0;
    fractions.push_back(1.0);
    for (double f : fractions) {
      const auto end = static_cast<int64_t>(f * static_cast<double>(s.flat_end));
      out.push_back(s.sub_range(prev, end));
      prev = end;
    }
    fractions.pop_back();
  }
  return out;
}

std::vector<float> values_of(const TensorSlice& s, int64_t cols) {
  std::vector<float> v;
  for (int64_t k = s.flat_begin; k < s.flat_end; ++k) {
    auto c = slice_coords(s, k);
    v.push_back(static_cast<float>(c[0] * cols + c[1]));  // the global flat index
  }
  return v;
}

TEST(TensorSlice, PiecesReassembleAnyOtherCutting) {
  const int64_t R = 12, C = 10;
  const auto src = cut(R, C, 0, 3, {0.37, 0.5});   // tp 3 on rows, ZeRO-like ranges
  const auto dst = cut(R, C, 1, 2, {0.23, 0.81});  // tp 2 on columns, other ranges
  for (const auto& d : dst) {
    std::vector<float> got(static_cast<size_t>(d.numel()), -1.0f);
    std::vector<uint8_t> covered(got.size(), 0);
    int64_t copied = 0;
    for (const auto& s : src) {
      auto sv = values_of(s, C);
      copied += copy_overlap(s, sv.data(), d, got.data(), covered.data());
    }
    EXPECT_EQ(copied, d.numel());
    EXPECT_EQ(got, values_of(d, C));
    EXPECT_TRUE(std::all_of(covered.begin(), covered.end(), [](uint8_t c) { return c == 1; }));
  }
}

TEST(TensorSlice, PaddedRowsAreOutsideTheSmallerTensor) {
  // Saved with 11 rows (tp 1), wanted with 12 (a vocabulary padded for tp 2).
  TensorSlice saved = TensorSlice::of_box({11, 4}, {11, 4}, -1, 0);
  TensorSlice want = TensorSlice::of_box({12, 4}, {6, 4}, 0, 6);
  auto sv = values_of(saved, 4);
  std::vector<float> got(24, -1.0f);
  EXPECT_EQ(copy_overlap(saved, sv.data(), want, got.data(), nullptr), 20);
  EXPECT_EQ(got[0], 24.0f);   // row 6
  EXPECT_EQ(got[20], -1.0f);  // row 11: padding, untouched
}

TEST(TensorSlice, JsonRoundTripAndValidation) {
  TensorSlice s = TensorSlice::of_box({8, 6}, {4, 6}, 0, 4).sub_range(5, 17);
  TensorSlice back = slice_from_json(slice_to_json(s), "test");
  EXPECT_EQ(back.offset, s.offset);
  EXPECT_EQ(back.flat_begin, 5);
  EXPECT_EQ(back.flat_end, 17);
  auto j = slice_to_json(s);
  j["offset"] = {6, 0};  // box [6, 10) exceeds 8 rows
  EXPECT_THROW(slice_from_json(j, "test"), Error);
}

}  // namespace
}  // namespace parallm
