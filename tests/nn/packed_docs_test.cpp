// Packed documents (nn/packed_docs.h): document starts (an EOD closes its
// document) and the count of tokens that carry a loss under the EOD mask.
#include "nn/packed_docs.h"

#include <gtest/gtest.h>

namespace parallm {
namespace {

TEST(PackedDocs, DocumentStartsFollowEod) {
  const int32_t E = 9;
  // Row 0: EOD first, a one-token document, EOD last; row 1: no EOD.
  const std::vector<int32_t> in = {E, 1, 2, E, 3, E, 4, E, /**/ 1, 2, 3, 4, 5, 6, 7, 8};
  const std::vector<int64_t> want = {0, 1, 1, 1, 4, 4, 6, 6, /**/ 0, 0, 0, 0, 0, 0, 0, 0};
  EXPECT_EQ(document_starts(in.data(), 2, 8, E), want);
}

TEST(PackedDocs, LossTokenCount) {
  const int32_t E = 9;
  const std::vector<int32_t> in = {1, E, 2, 3, E, 4};
  std::vector<int32_t> tg = {E, 2, 3, E, 4, -1};
  PackedDocs docs{.eod = E};
  EXPECT_EQ(loss_token_count(in.data(), tg.data(), 6, docs), 5);  // target -1 does not count
  docs.eod_mask_loss = true;
  EXPECT_EQ(loss_token_count(in.data(), tg.data(), 6, docs), 3);
}

}  // namespace
}  // namespace parallm
