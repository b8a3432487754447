// Layout invariance of data parallelism (DESIGN principle 1): over the world
// (dp = number of ranks), DDP with and without overlap and the parameter
// server (ZeRO-1/2/3: tests/parallel/zero), with gradient accumulation and a small bucket so
// several buckets overlap backward, follow the one-process trajectory:
// per-step losses, gradient norms and every final parameter tensor within
// the bounds docs/testing.md derives, for GPT-2
// (tied embedding) and LLaMA (untied head). The reference is computed on
// every rank. Parameter counts do not divide by 3 (np 3 runs uneven shards).
// Every layout runs under AdamW and under plain SGD: Adam's update does not
// change when an element's gradient is off by a constant factor, SGD's does.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "dp_env.h"

namespace parallm::dp_test {
namespace {

// DDP with and without overlap, and the parameter server (ZeRO's stages:
// tests/parallel/zero/zero_layout_dist.cpp).
const Layout kLayouts[] = {
    {0, DpMode::AllReduce, true},
    {0, DpMode::AllReduce, false},
    {0, DpMode::ParameterServer, true},
};

TEST(DataParallelLayout, Gpt2MatchesOneProcess) {
  for (const Layout& l : kLayouts) expect_layout_matches_one_process("gpt2", l);
}

TEST(DataParallelLayout, LlamaMatchesOneProcess) {
  for (const Layout& l : kLayouts) expect_layout_matches_one_process("llama", l);
}

TEST(DataParallelLayout, SgdMatchesOneProcess) {
  for (const char* family : {"gpt2", "llama"})
    for (const Layout& l : kLayouts) expect_layout_matches_one_process(family, l, "sgd");
}

}  // namespace
}  // namespace parallm::dp_test
