// Catalog presets against their published configs: Llama-3.2-1B's size
// (1,235,814,400 parameters, tied embeddings) and its llama3 rope scaling;
// the parameter counts of Mistral-7B, Qwen2.5-0.5B / 7B, Mixtral-8x7B and
// Qwen1.5-MoE-A2.7B (transformers' num_parameters() of each config) and
// their families.
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

TEST(ModelCatalog, FamilyPresetsHaveThePublishedSizes) {
  struct Want {
    const char* name;
    int64_t params;
    const char* hf_type;
  };
  for (const Want& w :
       {Want{"mistral-7b", 7241732096, "mistral"}, Want{"qwen2.5-0.5b", 494032768, "qwen2"},
        Want{"qwen2.5-7b", 7615616512, "qwen2"}, Want{"mixtral-8x7b", 46702792704, "mixtral"},
        Want{"qwen1.5-moe-a2.7b", 14315784192, "qwen2_moe"}}) {
    const ModelConfig c = catalog_model(w.name);
    EXPECT_NO_THROW(c.validate()) << w.name;
    EXPECT_EQ(c.num_parameters(), w.params) << w.name;
    EXPECT_EQ(c.hf_model_type(), w.hf_type) << w.name;
  }
  EXPECT_EQ(catalog_model("mistral-7b").sliding_window, 4096);
  EXPECT_TRUE(catalog_model("qwen2.5-0.5b").tie_embeddings);
}

}  // namespace
}  // namespace parallm
