// Layout invariance of ZeRO (DESIGN principle 1): over the world (dp = the
// ranks), stages 1, 2 and 3, with and without overlapping the gradient
// reduce-scatter, follow the one-process trajectory of GPT-2 (tied
// embedding) and LLaMA (untied head) under AdamW and plain SGD, within the
// bounds docs/testing.md derives; np 3 runs uneven shards. Built into the
// data-parallel binary (tests/parallel/data/tests.cmake), which computes the
// one-process references once for DDP's cases and these.
#include <gtest/gtest.h>

#include "dp_env.h"

namespace parallm::dp_test {
namespace {

const Layout kZeroLayouts[] = {
    {1, DpMode::AllReduce, true},  {2, DpMode::AllReduce, true},  {2, DpMode::AllReduce, false},
    {3, DpMode::AllReduce, true},  {3, DpMode::AllReduce, false},
};

TEST(ZeroLayout, Gpt2MatchesOneProcess) {
  for (const Layout& l : kZeroLayouts) expect_layout_matches_one_process("gpt2", l);
}

TEST(ZeroLayout, LlamaMatchesOneProcess) {
  for (const Layout& l : kZeroLayouts) expect_layout_matches_one_process("llama", l);
}

TEST(ZeroLayout, SgdMatchesOneProcess) {
  for (const char* family : {"gpt2", "llama"})
    for (const Layout& l : kZeroLayouts) expect_layout_matches_one_process(family, l, "sgd");
}

}  // namespace
}  // namespace parallm::dp_test
