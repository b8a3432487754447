// Catalog presets against their published configs: Llama-3.2-1B's size
// (1,235,814,400 parameters, tied embeddings) and its llama3 rope scaling.
#include "model/model_catalog.h"

#include <gtest/gtest.h>

#include "model/layers/rope_frequencies.h"

namespace parallm {
namespace {

TEST(ModelCatalog, Llama32OneBMatchesItsConfig) {
  const ModelConfig c = catalog_model("llama3.2-1b");
  EXPECT_NO_THROW(c.validate());
  EXPECT_EQ(c.num_parameters(), 1235814400);
  EXPECT_TRUE(c.tie_embeddings);
  EXPECT_EQ(c.head_dim, 64);
  EXPECT_EQ(c.max_positions, 131072);
  EXPECT_EQ(c.hf_model_type(), "llama");
  const RopeScaling want{.type = RopeScalingType::Llama3,
                         .factor = 32.0,
                         .low_freq_factor = 1.0,
                         .high_freq_factor = 4.0,
                         .original_max_positions = 8192};
  EXPECT_EQ(c.rope_scaling, want);
  // The lowest frequency: 500000^(-62/64) / 32, as transformers prints it
  // (9.41830649e-08 in float32).
  EXPECT_NEAR(RopeFrequencies(c).at_length(1).back(), 9.41830649e-08, 3e-6 * 9.41830649e-08);
}

}  // namespace
}  // namespace parallm
