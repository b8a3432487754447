// The MoE cases the expert-parallel layout tests train (GPT-2 and LLaMA
// experts, top-1 and top-2, dropless and with capacity drops by position or
// probability, aux and z losses on) and the comparison of one layout's
// trajectory against the one-process run (common/trajectory_match.h, within
// the bounds docs/testing.md derives): losses, gradient norms, both
// balancing losses, every parameter tensor (under pp: every tensor of the
// rank's stage); per-expert load and dropped fraction equal. Also the run in
// which experts get no token (many experts, top-1, few tokens a step).
#pragma once
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "common/named_flat.h"
#include "common/test_models.h"
#include "common/trajectory_match.h"
#include "ep_env.h"

namespace parallm::ep_test {

struct Case {
  std::string family;
  int topk;
  std::optional<double> capacity;
  DropPolicy policy = DropPolicy::Position;
  int experts = 4;
  std::string name() const {
    return fmt::format("{} {} experts top-{} {}", family, experts, topk,
                       capacity ? fmt::format("capacity {} ({})", *capacity,
                                              policy == DropPolicy::Position ? "position" : "probs")
                                : "dropless");
  }
};

inline ModelConfig model(const Case& c) {
  ModelConfig m = c.family == "gpt2" ? testing::tiny_gpt2() : testing::tiny_llama();
  m.intermediate = 64;
  m.moe.num_experts = c.experts;
  m.moe.topk = c.topk;
  m.moe.layer_freq = c.family == "gpt2" ? 1 : 2;  // LLaMA: layer 0 MoE, layer 1 dense
  m.moe.renormalize = c.topk > 1;
  m.moe.capacity_factor = c.capacity;
  m.moe.drop_policy = c.policy;
  m.moe.aux_loss_coeff = 0.01;
  m.moe.z_loss_coeff = 0.001;
  return m;
}

// The four cases the composed-layout tests run: GPT-2 top-1 dropless and
// top-2 capacity 1 by position, LLaMA top-2 dropless and top-1 capacity
// 1.25 by probability.
inline const Case kFourCases[] = {
    {"gpt2", 1, std::nullopt},
    {"gpt2", 2, 1.0},
    {"llama", 2, std::nullopt},
    {"llama", 1, 1.25, DropPolicy::Probs},
};

// A case's model with heads that tp 2 divides (the tp tests' shape).
inline ModelConfig tp_model(const Case& c) {
  ModelConfig m = model(c);
  m.n_heads = 4;
  m.n_kv_heads = c.family == "gpt2" ? 4 : 2;
  m.head_dim = 18;
  return m;
}

// The same with a shared expert in the dropping cases, tp-split like a
// dense MLP: plain for GPT-2, with Qwen2-MoE's sigmoid gate for LLaMA.
inline ModelConfig tp_shared_model(const Case& c) {
  ModelConfig m = tp_model(c);
  if (c.capacity) {
    m.moe.shared_intermediate = 32;
    m.moe.shared_expert_gate = c.family == "llama";
  }
  return m;
}

// Steps of a run in which some expert got no token in some MoE layer. The
// step's load is summed over the MoE layers, the micro-batches and the dp
// ranks, and loads are counts (never negative): a zero means the expert got
// no token in every layer, every micro-batch and every ep dispatch.
inline int steps_with_an_empty_expert(const RunResult& r) {
  int n = 0;
  for (const std::vector<double>& load : r.expert_loads)
    n += std::find(load.begin(), load.end(), 0.0) != load.end();
  return n;
}

// 16 experts, top-1, global batch 8 x 16 tokens, micro-batch 1: with so few
// tokens per expert, most steps leave some expert without a token.
inline Layout empty_expert_layout(int ep, int zero = 0) {
  return Layout{.ep = ep, .zero = zero, .micro = 1, .global = 8};
}

// got against ref; `what` names the layout in failure messages. The
// balancing losses are held to the loss's bound (means over the same tokens).
inline void expect_same_trajectory(const Case& c, const RunResult& ref, const RunResult& got,
                                   const std::string& what) {
  ASSERT_EQ(got.losses.size(), ref.losses.size()) << what;
  bool dropped = false;
  for (size_t s = 0; s < ref.losses.size(); ++s) {
    const std::string at = fmt::format("{}, step {}", what, s);
    EXPECT_EQ(got.dropped[s], ref.dropped[s]) << at << " dropped fraction";
    EXPECT_EQ(got.expert_loads[s], ref.expert_loads[s]) << at << " expert load";
    dropped = dropped || ref.dropped[s] > 0.0;
  }
  EXPECT_EQ(dropped, c.capacity.has_value()) << what << ": drops happen exactly with capacity";
  ASSERT_EQ(got.params.size(), ref.params.size()) << what;
  // Under pp a rank compares the tensors its stage holds (`held`); every
  // element must be held by some stage of its pipeline.
  EXPECT_EQ(got.unheld_by_pipeline, 0) << what << ": parameters no pipeline stage holds";
  const testing::Trajectory r{ref.losses, ref.grad_norms,
                              testing::named_from_flat(ref.model, ref.params)};
  const testing::Trajectory g{
      got.losses, got.grad_norms,
      testing::named_from_flat(ref.model, got.params, got.held.empty() ? nullptr : &got.held)};
  const RunArithmetic a =
      testing::run_arithmetic(ref.config, ref.model, r, testing::element_count(r.params));
  const TrajectoryBounds b = testing::expect_same_trajectory(a, r, g, what, !got.held.empty());
  testing::detail::Worst aux, z;
  testing::expect_steps_match(ref.aux_losses, got.aux_losses, b.loss, what, "aux loss", aux, 1e-12);
  testing::expect_steps_match(ref.z_losses, got.z_losses, b.loss, what, "z loss", z, 1e-12);
}

}  // namespace parallm::ep_test
