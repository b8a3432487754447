// LoRA target lists (model/lora/lora_targets.h): short and PEFT names, all-linear,
// round trip through str(), and clear errors for unknown or repeated names.
#include "model/lora/lora_targets.h"

#include <gtest/gtest.h>

#include "base/error.h"

namespace parallm {
namespace {

TEST(LoraTargets, ParsesShortAndPeftNames) {
  const LoraTargets t = LoraTargets::parse("q,v");
  EXPECT_TRUE(t.has(LoraTarget::Q));
  EXPECT_TRUE(t.has(LoraTarget::V));
  EXPECT_FALSE(t.has(LoraTarget::K));
  EXPECT_EQ(t.list().size(), 2u);
  EXPECT_EQ(t.str(), "q,v");
  EXPECT_EQ(LoraTargets::parse("v_proj, q_proj"), t);
  const LoraTargets mlp = LoraTargets::parse("down,gate,up");
  EXPECT_EQ(mlp.str(), "gate,up,down");
  EXPECT_FALSE(mlp.is_all_linear());
  EXPECT_EQ(lora_target_hf_name(LoraTarget::Gate), "gate_proj");
}

TEST(LoraTargets, AllLinearIsEveryBlockLinear) {
  const LoraTargets t = LoraTargets::parse("all-linear");
  EXPECT_TRUE(t.is_all_linear());
  EXPECT_EQ(t.list().size(), static_cast<size_t>(kNumLoraTargets));
  EXPECT_EQ(t.str(), "all-linear");
  EXPECT_EQ(t, LoraTargets::all_linear());
  // Naming all seven is the same set, but not "all-linear" (a GPT-2 gate is then an error).
  EXPECT_FALSE(LoraTargets::parse("q,k,v,o,gate,up,down").is_all_linear());
}

TEST(LoraTargets, RejectsUnknownAndRepeatedNames) {
  try {
    LoraTargets::parse("q,lm_head");
    FAIL() << "lm_head accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown LoRA target 'lm_head'"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(LoraTargets::parse(""), Error);
  EXPECT_THROW(LoraTargets::parse("q,,v"), Error);
  EXPECT_THROW(LoraTargets::parse("q,q_proj"), Error);
}

}  // namespace
}  // namespace parallm
