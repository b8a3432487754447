#include "nn/parameters.h"

#include <gtest/gtest.h>

namespace parallm {

// A shard initialised with its slice description holds exactly the
// corresponding slice of the unsharded tensor (layout invariance).
TEST(ParameterSet, ShardedInitEqualsSliceOfFullTensor) {
  Allocator a;
  ParameterSet full, shard0, shard1;
  full.add({.name = "w", .shape = {6, 5}});
  shard0.add(
      {.name = "w", .shape = {6, 2}, .global_shape = {6, 5}, .shard_dim = 1, .shard_begin = 0});
  shard1.add(
      {.name = "w", .shape = {6, 3}, .global_shape = {6, 5}, .shard_dim = 1, .shard_begin = 2});
  for (auto* p : {&full, &shard0, &shard1}) {
    p->allocate(a);
    p->init_random(42);
  }
  const float* f = full.value({0});
  for (int r = 0; r < 6; ++r) {
    for (int c = 0; c < 2; ++c) EXPECT_EQ(shard0.value({0})[r * 2 + c], f[r * 5 + c]);
    for (int c = 0; c < 3; ++c) EXPECT_EQ(shard1.value({0})[r * 3 + c], f[r * 5 + 2 + c]);
  }
}

TEST(ParameterSet, InitDependsOnSeedAndNameOnly) {
  Allocator a;
  ParameterSet x, y;
  x.add({.name = "a", .shape = {4}});
  x.add({.name = "b", .shape = {4}, .init_std = 1.0});
  y.add({.name = "b", .shape = {4}, .init_std = 1.0});  // registered in another order
  x.allocate(a);
  y.allocate(a);
  x.init_random(1);
  y.init_random(1);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(x.value({1})[i], y.value({0})[i]);
  EXPECT_NE(x.value({0})[0], x.value({1})[0] * 0.02f);
}

TEST(ParameterSet, RejectsDuplicatesAndLateRegistration) {
  Allocator a;
  ParameterSet p;
  p.add({.name = "a", .shape = {2}});
  EXPECT_THROW(p.add({.name = "a", .shape = {2}}), Error);
  p.allocate(a);
  EXPECT_THROW(p.add({.name = "b", .shape = {2}}), Error);
  EXPECT_EQ(a.current(MemTag::Parameter), a.current(MemTag::Gradient));
}

}  // namespace parallm
