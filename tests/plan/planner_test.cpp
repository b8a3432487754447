// The step-time model's terms behave as their formulas say, and the planner
// returns only valid layouts that fit memory, fastest first (ties by
// blocking exchanges), within the fixed sizes; its search over 1024
// devices takes well under a second.
#include "plan/planner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <set>

#include "base/error.h"
#include "model/model_catalog.h"

namespace parallm {
namespace {

MemoryQuery gpt3_megatron_layout() {
  MemoryQuery q;
  q.model = catalog_model("gpt3-175b");
  q.seq_len = 2048;
  q.micro_batch = 1;
  q.micro_batches = 1536 / 8;
  q.tp = 8, q.pp = 16, q.dp = 8;
  q.sequence_parallel = true;
  q.zero = 1;
  q.recompute = Recompute::Full;
  return q;
}

TEST(StepTime, TermsFollowTheirFormulas) {
  const DeviceProfile a100 = builtin_profile("a100-80gb");
  MemoryQuery q = gpt3_megatron_layout();
  const StepTime t = predict_step_time(q, a100);
  EXPECT_NEAR(t.total_s,
              t.compute_s + t.elementwise_s + t.tp_comm_s + t.cp_comm_s + t.pp_bubble_s +
                  t.pp_p2p_s + t.dp_exposed_s + t.optimizer_s,
              1e-9 * t.total_s);
  // 1F1B bubble: (p - 1) micro-batches' stage time.
  q.schedule = pipeline::ScheduleKind::OneFOneB;
  const StepTime f = predict_step_time(q, a100);
  const double stage = (f.compute_s + f.elementwise_s + f.tp_comm_s) / q.micro_batches;
  EXPECT_NEAR(f.pp_bubble_s, 15 * stage, 1e-9 * f.pp_bubble_s);
  q.schedule = pipeline::ScheduleKind::Interleaved;
  q.virtual_stages = 2;
  EXPECT_NEAR(predict_step_time(q, a100).pp_bubble_s, f.pp_bubble_s / 2, 1e-9 * f.pp_bubble_s);
  // Faster links make the communication terms smaller, never the compute.
  DeviceProfile fast = a100;
  fast.intra_node.bytes_per_s *= 10;
  fast.inter_node.bytes_per_s *= 10;
  const StepTime g = predict_step_time(q, fast);
  EXPECT_LT(g.tp_comm_s, predict_step_time(q, a100).tp_comm_s);
  EXPECT_EQ(g.compute_s, predict_step_time(q, a100).compute_s);
  // No tensor parallelism, no tp collectives; full recompute costs FLOPs.
  q.tp = 1, q.dp = 64, q.sequence_parallel = false;
  EXPECT_EQ(predict_step_time(q, a100).tp_comm_s, 0.0);
  MemoryQuery none = q;
  none.recompute = Recompute::None;
  EXPECT_LT(predict_step_time(none, a100).compute_s, predict_step_time(q, a100).compute_s);
}

// ZeRO-2/3 keep only a gradient shard, so they reduce-scatter every
// micro-batch; ZeRO-3 also gathers the parameters for every micro-batch's
// forward and backward. DDP and ZeRO-1 reduce once a step.
TEST(StepTime, ZeroTwoAndThreeCommunicateEveryMicroBatch) {
  const DeviceProfile a100 = builtin_profile("a100-80gb");
  MemoryQuery q;
  q.model = catalog_model("llama-tiny");
  q.seq_len = 256;
  q.micro_batch = 1;
  q.micro_batches = 8;
  q.dp = 4;
  const double all_reduce = predict_step_time(q, a100).dp_comm_s;  // DDP: one all-reduce
  ASSERT_GT(all_reduce, 0.0);
  q.zero = 1;
  EXPECT_NEAR(predict_step_time(q, a100).dp_comm_s, all_reduce, 1e-12);
  q.zero = 2;  // 8 reduce-scatters and one all-gather, half an all-reduce each
  EXPECT_NEAR(predict_step_time(q, a100).dp_comm_s, all_reduce / 2 * 9, 1e-12);
  q.zero = 3;  // per micro-batch: a reduce-scatter and two all-gathers
  EXPECT_NEAR(predict_step_time(q, a100).dp_comm_s, all_reduce / 2 * 3 * 8, 1e-12);
  // Fewer, larger micro-batches: fewer ZeRO-3 rounds.
  q.micro_batch = 8;
  q.micro_batches = 1;
  EXPECT_NEAR(predict_step_time(q, a100).dp_comm_s, all_reduce / 2 * 3, 1e-12);
}

// GPT-3 175B on 1024 A100s at Megatron's SC21 sequence and batch.
PlanRequest gpt3_on_1024_a100() {
  PlanRequest r;
  r.model = catalog_model("gpt3-175b");
  r.devices = 1024;
  r.seq_len = 2048;
  r.global_batch = 1536;
  r.device = builtin_profile("a100-80gb");
  return r;
}

TEST(Planner, ValidLayoutsThatFitFastestFirst) {
  PlanRequest r = gpt3_on_1024_a100();
  r.tie_tolerance = 0;  // by predicted time alone (ties: the next test)
  const auto t0 = std::chrono::steady_clock::now();
  const PlanResult res = plan_layouts(r, 20);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 5.0);
  ASSERT_EQ(res.best.size(), 20u);
  EXPECT_GT(res.enumerated, res.fit);  // some layouts are pruned by memory
  for (size_t i = 0; i < res.best.size(); ++i) {
    const MemoryQuery& q = res.best[i].query;
    EXPECT_EQ(q.tp * q.pp * q.dp * q.cp, 1024);
    EXPECT_EQ(r.model.n_heads % q.tp, 0);
    EXPECT_EQ(r.model.n_layers % q.pp, 0);
    EXPECT_LE(q.tp, 8);
    EXPECT_EQ(q.micro_batch * q.micro_batches * q.dp, 1536);
    EXPECT_LE(res.best[i].memory_bytes, r.device.memory_bytes);
    EXPECT_TRUE(q.pp == 1 || q.zero <= 1);  // parallm runs ZeRO-2/3 without pp only
    if (i > 0) {
      EXPECT_GE(res.best[i].time.total_s, res.best[i - 1].time.total_s);
    }
  }
  // A 40 GB device prunes more.
  r.device.memory_bytes = 40e9;
  EXPECT_LT(plan_layouts(r, 1).fit, res.fit);
  // Fixed sizes are respected.
  r.fixed = parse_fixed({"tp=8", "pp=16", "recompute=full"});
  for (const auto& c : plan_layouts(r, 50).best) {
    EXPECT_EQ(c.query.tp, 8);
    EXPECT_EQ(c.query.pp, 16);
    EXPECT_EQ(c.query.recompute, Recompute::Full);
  }
}

// Layouts predicted within the tie tolerance of the fastest are taken as
// equal and lead by their blocking exchanges per step (fewest first; at
// equal counts, the least time on the wire), the rest follow by predicted
// time; the first is the layout with the fewest exchanges of all those
// within the tolerance.
TEST(Planner, TiedLayoutsLeadByFewestBlockingExchanges) {
  PlanRequest r = gpt3_on_1024_a100();
  r.tie_tolerance = 0;
  const PlanResult by_time = plan_layouts(r, 100000);
  r.tie_tolerance = 0.02;
  const PlanResult tied = plan_layouts(r, 100000);
  ASSERT_EQ(by_time.best.size(), tied.best.size());
  EXPECT_EQ(by_time.tied, 1);
  const double fastest = by_time.best.front().time.total_s;
  double fewest = 1e300;
  int within = 0;
  for (const PlanCandidate& c : by_time.best)
    if (c.time.total_s <= fastest * 1.02) fewest = std::min(fewest, c.time.syncs), ++within;
  ASSERT_GT(within, 1);  // this search has a tie to break
  EXPECT_EQ(tied.tied, within);
  EXPECT_EQ(tied.best.front().time.syncs, fewest);
  EXPECT_GT(tied.best.front().time.total_s, fastest);  // not the fastest prediction here
  for (int i = 0; i < static_cast<int>(tied.best.size()); ++i) {
    const StepTime& t = tied.best[i].time;
    if (i < tied.tied) {
      EXPECT_LE(t.total_s, fastest * 1.02);
      if (i > 0) {
        EXPECT_GE(t.syncs, tied.best[i - 1].time.syncs);
      }
      if (i > 0 && t.syncs == tied.best[i - 1].time.syncs) {
        EXPECT_GE(t.wire_s(), tied.best[i - 1].time.wire_s());
      }
    } else {
      EXPECT_GT(t.total_s, fastest * 1.02);
      if (i > tied.tied) {
        EXPECT_GE(t.total_s, tied.best[i - 1].time.total_s);
      }
    }
  }
  r.tie_tolerance = -0.1;
  EXPECT_THROW(plan_layouts(r, 1), Error);
}

// MoE layouts: ep divides the experts and dp x cp (the grid folds both),
// ZeRO-3 included; cp with ep spanning the cp ranks is searched.
TEST(Planner, MoeLayoutsFoldEpIntoDpTimesCp) {
  PlanRequest r;
  r.model = catalog_model("llama-tiny");
  r.model.moe.num_experts = 4;
  r.model.moe.topk = 2;
  r.devices = 4;
  r.seq_len = 256;
  r.global_batch = 8;
  r.device = builtin_profile("a100-80gb");
  const PlanResult all = plan_layouts(r, 100000);
  bool cp_ep = false, zero3_ep = false;
  for (const PlanCandidate& c : all.best) {
    const MemoryQuery& q = c.query;
    EXPECT_EQ((q.dp * q.cp) % q.ep, 0);
    EXPECT_EQ(r.model.moe.num_experts % q.ep, 0);
    cp_ep = cp_ep || (q.cp == 2 && q.dp == 2 && q.ep == 4);
    zero3_ep = zero3_ep || (q.ep > 1 && q.zero == 3);
  }
  EXPECT_TRUE(cp_ep) << "cp 2 x dp 2 with ep 4 over both";
  EXPECT_TRUE(zero3_ep);
}

// Which activations prune: Megatron-LM's keep the s^2 attention scores
// without recomputation, parallm's flash kernel keeps none. At 16k tokens a
// small model's scores alone exceed the device under Megatron's count, so
// only selective recomputation fits; parallm's own count (the default on a
// calibrated machine, where the layouts run parallm's layers) keeps them all.
TEST(Planner, ActivationModelDecidesWhatFitsAtLongSequences) {
  PlanRequest r;
  r.model = catalog_model("gpt2-tiny");
  r.model.hidden = 256;
  r.model.n_layers = 2;
  r.model.n_heads = r.model.n_kv_heads = 8;
  r.model.head_dim = 32;
  r.model.max_positions = 16384;
  r.devices = 1;
  r.seq_len = 16384;
  r.global_batch = 1;
  r.device = builtin_profile("a100-80gb");
  r.device.memory_bytes = 4e9;
  EXPECT_EQ(default_activation_model(r.device), ActivationModel::Megatron16);
  const auto recompute_modes = [&] {
    std::set<Recompute> modes;
    for (const PlanCandidate& c : plan_layouts(r, 100).best) modes.insert(c.query.recompute);
    return modes;
  };
  // Full recomputation rebuilds one layer's whole set, scores included.
  EXPECT_EQ(recompute_modes(), (std::set<Recompute>{Recompute::Selective}));
  r.activation_model = ActivationModel::Parallm;
  EXPECT_EQ(recompute_modes(),
            (std::set<Recompute>{Recompute::None, Recompute::Selective, Recompute::Full}));
  DeviceProfile calibrated = r.device;
  calibrated.ops.resize(1);
  EXPECT_EQ(default_activation_model(calibrated), ActivationModel::Parallm);
}

// Megatron-LM SC21 (Narayanan et al. 2021): GPT-3 175B on 1024 A100s at
// tp 8, pp 16, dp 8, micro-batch 1, full recomputation, 138 TFLOP/s per GPU
// (hardware FLOPs). That run had no sequence parallelism, no distributed
// optimizer and no zero-bubble schedule (all later work): fixing them as it
// ran, the prediction is within the 25% (docs/planner.md's table).
TEST(Planner, Gpt3AtTheSc21LayoutWithin25PercentOfPublished) {
  PlanRequest r;
  r.model = catalog_model("gpt3-175b");
  r.devices = 1024;
  r.seq_len = 2048;
  r.global_batch = 1536;
  r.device = builtin_profile("a100-80gb");
  for (const char* schedule : {"schedule=1f1b", "schedule=interleaved"}) {
    r.fixed = parse_fixed(
        {"tp=8", "pp=16", "dp=8", "cp=1", "mb=1", "recompute=full", "sp=0", "zero=0", schedule});
    const PlanResult res = plan_layouts(r, 1);
    ASSERT_EQ(res.best.size(), 1u) << schedule;
    const MemoryQuery& q = res.best[0].query;
    EXPECT_FALSE(q.sequence_parallel);
    const double tflops = res.best[0].time.hw_flops_per_device / 1e12;
    EXPECT_NEAR(tflops / 138.0, 1.0, 0.25) << schedule << ": predicted " << tflops;
  }
  // Sequence parallelism is searched both ways under tp, and named.
  r.fixed = parse_fixed(
      {"tp=8", "pp=16", "dp=8", "cp=1", "mb=1", "recompute=full", "zero=0", "schedule=1f1b"});
  const PlanResult both = plan_layouts(r, 10);
  ASSERT_EQ(both.best.size(), 2u);
  EXPECT_NE(both.best[0].query.sequence_parallel, both.best[1].query.sequence_parallel);
  EXPECT_NE(describe_layout(both.best[1].query).find("no-sp"), std::string::npos);
}

TEST(Planner, ClearErrors) {
  auto msg = [](std::vector<std::string> v) {
    try {
      parse_fixed(v);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(msg({"tq=8"}).find("unknown key 'tq'"), std::string::npos);
  EXPECT_NE(msg({"tp=x"}).find("'x' is not an integer"), std::string::npos);
  EXPECT_NE(msg({"tp8"}).find("expected key=value"), std::string::npos);
  EXPECT_NE(msg({"pp=0"}).find("out of range"), std::string::npos);
  EXPECT_NE(msg({"sp=2"}).find("out of range"), std::string::npos);
  EXPECT_THROW(parse_fixed({"schedule=fast"}), Error);
  EXPECT_THROW(builtin_profile("v100"), Error);
}

}  // namespace
}  // namespace parallm
