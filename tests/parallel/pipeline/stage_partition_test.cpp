// Tests of the layer split over stages and model chunks.
#include <gtest/gtest.h>

#include "common/test_util.h"
#include "parallel/pipeline/stage_partition.h"

namespace parallm::pipeline {
namespace {

TEST(StagePartition, EvenSplitCoversEveryLayerOnce) {
  const StagePartition p = partition_layers(12, 4, 1);
  ASSERT_EQ(p.chunks.size(), 4u);
  for (int s = 0; s < 4; ++s) {
    EXPECT_EQ(p.at(s, 0).first_layer, 3 * s);
    EXPECT_EQ(p.at(s, 0).num_layers, 3);
  }
  EXPECT_TRUE(p.at(0, 0).has_embedding);
  EXPECT_FALSE(p.at(1, 0).has_embedding);
  EXPECT_TRUE(p.at(3, 0).has_head);
  EXPECT_FALSE(p.at(2, 0).has_head);
}

TEST(StagePartition, UnevenRemainderGoesToEarlierStages) {
  const StagePartition p = partition_layers(10, 4, 1);
  EXPECT_EQ(p.at(0, 0).num_layers, 3);
  EXPECT_EQ(p.at(1, 0).num_layers, 3);
  EXPECT_EQ(p.at(2, 0).num_layers, 2);
  EXPECT_EQ(p.at(3, 0).num_layers, 2);
  EXPECT_EQ(p.at(3, 0).first_layer, 8);
}

TEST(StagePartition, ChunksAreVirtualStagesCTimesPpPlusS) {
  const StagePartition p = partition_layers(16, 4, 2);
  // chunk 1 of stage 0 is virtual stage 4: layers 8, 9
  EXPECT_EQ(p.at(0, 1).virtual_stage, 4);
  EXPECT_EQ(p.at(0, 1).first_layer, 8);
  EXPECT_EQ(p.at(3, 0).first_layer, 6);
  EXPECT_TRUE(p.at(0, 0).has_embedding);
  EXPECT_TRUE(p.at(3, 1).has_head);
  EXPECT_FALSE(p.at(3, 0).has_head);
}

// DualPipeV's V: chunk 0 goes down the stages, chunk 1 comes back, so stage
// 0 holds the first and the last layers (embedding and head) and stage 3 the
// two middle ranges.
TEST(StagePartition, VPlacementFoldsTheModel) {
  const StagePartition p = partition_layers(16, 4, 2, {}, Placement::V);
  EXPECT_EQ(p.at(0, 0).first_layer, 0);
  EXPECT_EQ(p.at(0, 1).virtual_stage, 7);
  EXPECT_EQ(p.at(0, 1).first_layer, 14);
  EXPECT_EQ(p.at(3, 0).first_layer, 6);
  EXPECT_EQ(p.at(3, 1).virtual_stage, 4);
  EXPECT_EQ(p.at(3, 1).first_layer, 8);
  EXPECT_TRUE(p.at(0, 0).has_embedding);
  EXPECT_TRUE(p.at(0, 1).has_head);
  for (int vs = 0; vs < 8; ++vs) {
    const StageChunk at = place_virtual_stage(Placement::V, 4, vs);
    EXPECT_EQ(placed_virtual_stage(Placement::V, 4, at.stage, at.chunk), vs);
    EXPECT_EQ(p.chunks[vs].stage, at.stage);
  }
}

TEST(StagePartition, UserCounts) {
  const StagePartition p = partition_layers(16, 4, 1, parse_layer_counts("3,5,5,3"));
  EXPECT_EQ(p.at(1, 0).first_layer, 3);
  EXPECT_EQ(p.at(2, 0).num_layers, 5);
  EXPECT_EQ(p.at(3, 0).first_layer, 13);
}

TEST(StagePartition, ClearErrors) {
  using testing::error_of;
  EXPECT_EQ(error_of([] { partition_layers(10, 4, 3); }),
            "cannot split 10 layers into 4 stages x 3 chunks");
  EXPECT_EQ(error_of([] {
              partition_layers(12, 4, 1, {3, 5, 5, 3});
            }),
            "--pp-layers 3,5,5,3 sums to 16 layers, but the model has 12");
  EXPECT_EQ(error_of([] {
              partition_layers(12, 4, 1, {4, 4, 4});
            }),
            "--pp-layers lists 3 layer counts, but pp (4) x virtual stages (1) needs 4");
  EXPECT_EQ(error_of([] {
              partition_layers(12, 4, 1, {6, 6, 0, 0});
            }),
            "--pp-layers gives virtual stage 2 0 layers; each needs at least 1");
  EXPECT_EQ(error_of([] { parse_layer_counts("3,x,5"); }),
            "bad layer count 'x' in '3,x,5' (expected non-negative integers like 3,5,5,3)");
  EXPECT_EQ(error_of([] { parse_layer_counts("3,,5"); }),
            "bad layer count '' in '3,,5' (expected non-negative integers like 3,5,5,3)");
}

}  // namespace
}  // namespace parallm::pipeline
