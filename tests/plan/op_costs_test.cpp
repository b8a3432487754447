// Calibrated kernel costs: the grid returns the measured times at its
// points and interpolates the rate between them, clamped beyond the edges;
// a profile round-trips through JSON; the per-rank work of a layout adds up
// to the model's 6N FLOPs; and the calibrated step time prices ranks that
// share cores.
#include "plan/op_costs.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "base/error.h"
#include "model/model_catalog.h"
#include "plan/arrival_wait.h"
#include "plan/device_profile.h"
#include "plan/flops.h"
#include "plan/processor_sharing.h"
#include "plan/stage_work.h"
#include "plan/step_time.h"

namespace parallm {
namespace {

// A grid whose forward rate is 1e9 * log2(rows) FLOP/s (backward half of
// that), every element-wise kind 1 ns forward and 2 ns backward.
OpCosts synthetic_costs(int threads = 1) {
  OpCosts c;
  c.threads = threads;
  c.rows = {64, 256, 1024};
  c.ins = {32, 128};
  c.outs = {32, 128};
  for (int64_t r : c.rows)
    for (int64_t in : c.ins)
      for (int64_t out : c.outs) {
        const double rate = 1e9 * std::log2(static_cast<double>(r)) * threads;
        c.fwd_s.push_back(2.0 * r * in * out / rate);
        c.bwd_s.push_back(4.0 * r * in * out / (rate / 2));
      }
  c.attn_seq = {128, 512};
  c.attn_fwd_s = {1e-9 / threads, 2e-9 / threads};
  c.attn_bwd_s = {3e-9 / threads, 6e-9 / threads};
  for (const char* k : {"rmsnorm", "layernorm", "swiglu", "gelu", "rope", "add", "cross_entropy",
                        "embedding", "moe_rows"}) {
    c.elem_fwd_s[k] = 1e-9 / threads;
    c.elem_bwd_s[k] = 2e-9 / threads;
  }
  c.optimizer_s_per_param = 3e-9 / threads;
  c.copy_bytes_per_s = 5e9;
  return c;
}

TEST(OpCosts, GridPointsAreTheMeasuredTimes) {
  const OpCosts c = synthetic_costs();
  // (equal up to the rounding of the rate's log and exp)
  const double fwd = c.fwd_s[(1 * 2 + 0) * 2 + 1], bwd = c.bwd_s[(2 * 2 + 1) * 2 + 0];
  EXPECT_NEAR(c.linear_fwd_s(256, 32, 128), fwd, 1e-12 * fwd);
  EXPECT_NEAR(c.linear_bwd_s(1024, 128, 32), bwd, 1e-12 * bwd);
}

TEST(OpCosts, InterpolatesTheRateInLog2AndClampsAtTheEdges) {
  const OpCosts c = synthetic_costs();
  // Halfway (in log2) between rows 64 and 256: the rate's log is the mean of
  // log(6e9) and log(8e9).
  const double rate = std::exp((std::log(6e9) + std::log(8e9)) / 2);
  EXPECT_NEAR(c.linear_fwd_s(128, 32, 32), 2.0 * 128 * 32 * 32 / rate, 1e-15);
  // Beyond the grid the edge's rate holds: time grows with the FLOPs.
  EXPECT_NEAR(c.linear_fwd_s(4096, 512, 32), 2.0 * 4096 * 512 * 32 / 10e9, 1e-12);
  EXPECT_NEAR(c.linear_fwd_s(8, 32, 32), 2.0 * 8 * 32 * 32 / 6e9, 1e-15);
  EXPECT_EQ(c.linear_fwd_s(0, 32, 32), 0.0);
  // Attention: per-unit time interpolated between lengths, clamped beyond.
  EXPECT_NEAR(c.attention_s(Pass::Forward, 1e6, 256, 64), 1e6 * std::sqrt(2.0) * 1e-9, 1e-12);
  EXPECT_NEAR(c.attention_s(Pass::Backward, 1e6, 4096, 64), 1e6 * 6e-9, 1e-12);
  EXPECT_DOUBLE_EQ(c.elementwise_s(Pass::Backward, "rope", 1e6), 2e-3);
  EXPECT_THROW(c.elementwise_s(Pass::Forward, "softmax", 1), Error);
}

// The head-dim sweep scales the length sweep by its ratio to the length
// sweep's head dim, interpolated in log2 and clamped; a profile without it
// (older calibrations) prices every head dim alike.
TEST(OpCosts, HeadDimScalesAttentionByItsRatioToTheSweepsHeadDim) {
  OpCosts c = synthetic_costs();
  const double at64 = c.attention_s(Pass::Forward, 1e6, 512, 64);
  EXPECT_EQ(c.attention_s(Pass::Forward, 1e6, 512, 32), at64);
  c.attn_dims = {32, 64, 128};
  c.attn_dim_fwd_s = {3e-9, 2.5e-9, 2e-9};
  c.attn_dim_bwd_s = {9e-9, 6e-9, 6e-9};
  c.validate("test");
  EXPECT_NEAR(c.attention_s(Pass::Forward, 1e6, 512, 32), at64 * 3.0 / 2.5, 1e-12);
  EXPECT_NEAR(c.attention_s(Pass::Forward, 1e6, 512, 64), at64, 1e-12);
  EXPECT_NEAR(c.attention_s(Pass::Backward, 1e6, 128, 16), 1e6 * 3e-9 * 9.0 / 6.0, 1e-12);
  // Halfway in log2 between 64 and 128: the geometric mean of the factors.
  EXPECT_NEAR(c.attention_s(Pass::Forward, 1e6, 512, 91), at64 * std::sqrt(2.0 / 2.5), at64 * 5e-3);
  const OpCosts back = op_costs_from_json(op_costs_to_json(c), "test");
  EXPECT_EQ(back.attn_dims, c.attn_dims);
  EXPECT_EQ(back.attn_dim_bwd_s, c.attn_dim_bwd_s);
  EXPECT_EQ(back.attn_dim_seq, c.attn_dim_seq);
  c.attn_dim_bwd_s.pop_back();
  EXPECT_THROW(c.validate("test"), Error);
}

TEST(OpCosts, JsonRoundTripAndClearErrors) {
  const OpCosts c = synthetic_costs(2);
  const OpCosts back = op_costs_from_json(op_costs_to_json(c), "test");
  EXPECT_EQ(back.threads, 2);
  EXPECT_EQ(back.fwd_s, c.fwd_s);
  EXPECT_EQ(back.elem_bwd_s, c.elem_bwd_s);
  nlohmann::json j = op_costs_to_json(c);
  j["linear"]["fwd_s"].erase(0);
  try {
    op_costs_from_json(j, "p.json");
    FAIL() << "a short grid was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("p.json: linear grid of 3 x 2 x 2 needs 12"),
              std::string::npos)
        << e.what();
  }
}

// A calibrated two-core machine with the synthetic costs at 1 and 2 threads.
DeviceProfile two_core_profile() {
  DeviceProfile d;
  d.name = "two cores";
  d.peak_flops = 1e10;
  d.gemm_efficiency = 1;
  d.memory_bytes = 1e10;
  d.memory_bytes_per_s = 1e10;
  d.cores = 2;
  d.devices_per_node = 8;
  d.precision = Precision::FP32;
  d.intra_node = d.inter_node = {.alpha_s = 2e-5, .bytes_per_s = 2e9};
  d.ops = {synthetic_costs(1), synthetic_costs(2)};
  return d;
}

TEST(OpCosts, ProfileWithOpsRoundTripsThroughAFile) {
  DeviceProfile d = two_core_profile();
  d.arrival_jitter = 0.0125;
  const auto path = std::filesystem::temp_directory_path() / "parallm_op_costs_profile.json";
  save_profile(d, path.string());
  const DeviceProfile back = load_profile(path.string());
  EXPECT_EQ(back.cores, 2);
  EXPECT_EQ(back.precision, Precision::FP32);
  ASSERT_EQ(back.ops.size(), 2u);
  EXPECT_EQ(back.ops[1].threads, 2);
  EXPECT_DOUBLE_EQ(back.intra_node.alpha_s, 2e-5);
  EXPECT_DOUBLE_EQ(back.arrival_jitter, 0.0125);
  // A bad jitter is refused naming the file; a profile without one has none.
  std::ifstream in(path);
  nlohmann::json j = nlohmann::json::parse(in);
  in.close();
  for (const nlohmann::json& bad : {nlohmann::json(-0.01), nlohmann::json("fast")}) {
    j["arrival_jitter"] = bad;
    std::ofstream(path) << j.dump();
    try {
      load_profile(path.string());
      ADD_FAILURE() << "arrival_jitter " << bad.dump() << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("arrival_jitter"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(path.string()), std::string::npos) << e.what();
    }
  }
  j.erase("arrival_jitter");
  std::ofstream(path) << j.dump();
  EXPECT_EQ(load_profile(path.string()).arrival_jitter, 0.0);
  std::filesystem::remove(path);
}

// Sum of 2 * rows * in * out * calls over the linears, forward and backward
// (3x), over micro-batches and tp ranks: the 6N part of 6N + 12LHQT.
double linear_flops(const MemoryQuery& q) {
  double f = 0;
  for (const StageWork& w : end_stage_works(q))
    for (const LinearWork& l : w.linears) f += 6.0 * l.rows * l.in * l.out * l.calls;
  return f * q.micro_batches * q.tp;
}

TEST(StageWork, LinearsAddUpToSixNPerToken) {
  MemoryQuery q;
  q.model = catalog_model("llama-tiny");
  q.model.n_kv_heads = 6;  // heads divide evenly over tp (no replicated key/value heads)
  q.seq_len = 128;
  q.micro_batch = 4;
  q.micro_batches = 2;
  const double tokens = 128.0 * 4 * 2;
  const double six_n = 6.0 * static_cast<double>(matmul_parameters(q.model)) * tokens;
  EXPECT_NEAR(linear_flops(q), six_n, 1e-9 * six_n);
  q.tp = 2;
  q.sequence_parallel = true;
  EXPECT_NEAR(linear_flops(q), six_n, 1e-9 * six_n);
  // cp halves each rank's rows; the two cp ranks together do the same work.
  q.tp = 1;
  q.cp = 2;
  EXPECT_NEAR(2 * linear_flops(q), six_n, 1e-9 * six_n);
}

TEST(StageWork, PipelineEndsAndRecomputation) {
  MemoryQuery q;
  q.model = catalog_model("llama-tiny");
  q.seq_len = 64;
  q.pp = 2;
  const auto ends = end_stage_works(q);
  ASSERT_EQ(ends.size(), 2u);
  EXPECT_TRUE(ends[0].elements.contains("embedding"));
  EXPECT_FALSE(ends[0].elements.contains("cross_entropy"));
  EXPECT_TRUE(ends[1].elements.contains("cross_entropy"));
  EXPECT_TRUE(ends[0].recomputed.empty());
  q.recompute = Recompute::Full;
  const auto full = end_stage_works(q);
  EXPECT_EQ(full[0].recomputed.size(), full[0].linears.size());  // the first stage: blocks only
  EXPECT_DOUBLE_EQ(full[0].attn_units_recomputed, full[0].attn_units);
  q.recompute = Recompute::Selective;
  const auto sel = end_stage_works(q);
  EXPECT_TRUE(sel[0].recomputed.empty());
  EXPECT_TRUE(sel[0].elements_recomputed.contains("swiglu"));
  EXPECT_FALSE(sel[0].elements_recomputed.contains("add"));
}

TEST(StageWork, MoeLayersMoveTheirAssignedRows) {
  MemoryQuery q;
  q.model = catalog_model("llama-tiny");
  q.seq_len = 128;
  q.micro_batch = 4;
  EXPECT_FALSE(end_stage_works(q)[0].elements.contains("moe_rows"));  // dense: none
  q.model.moe.num_experts = 4;
  q.model.moe.topk = 2;
  // Every layer moves its 512 rows' 2 assignments of `hidden` values, into
  // send order and back; ep and the load do not change this rank's sends.
  const double want = static_cast<double>(q.model.n_layers) * 512 * 2 * q.model.hidden;
  EXPECT_DOUBLE_EQ(end_stage_works(q)[0].elements.at("moe_rows"), want);
  q.ep = 2;
  q.ep_max_load = {{2, 1.5}};
  EXPECT_DOUBLE_EQ(end_stage_works(q)[0].elements.at("moe_rows"), want);
  q.ep = 1;
  q.tp = 2;  // sequence parallel: each tp rank routes its half of the rows
  q.sequence_parallel = true;
  EXPECT_DOUBLE_EQ(end_stage_works(q)[0].elements.at("moe_rows"), want / 2);
}

// llama-tiny, 4 sequences of 128 a micro-batch, fp32, one rank.
MemoryQuery tiny_query(int64_t micro_batches) {
  MemoryQuery q;
  q.model = catalog_model("llama-tiny");
  q.seq_len = 128;
  q.micro_batch = 4;
  q.micro_batches = micro_batches;
  q.precision = Precision::FP32;
  return q;
}

TEST(StepTime, CalibratedRanksShareTheCores) {
  const DeviceProfile d = two_core_profile();
  MemoryQuery q = tiny_query(4);
  // One rank uses both cores (the 2-thread costs: half the time of 1 thread).
  const StepTime one = predict_step_time(q, d);
  const StageWork w = end_stage_works(q)[0];
  const StageSeconds two_threads = price_stage(w, d.ops[1]);
  EXPECT_NEAR(one.compute_s, 4 * two_threads.matmul_s, 1e-12);
  EXPECT_NEAR(one.elementwise_s, 4 * two_threads.elementwise_s, 1e-12);
  // dp 2: each rank one thread, half the micro-batches: the same compute time.
  q.dp = 2;
  q.micro_batches = 2;
  const StepTime dp2 = predict_step_time(q, d);
  EXPECT_NEAR(dp2.compute_s, one.compute_s, 1e-9);
  EXPECT_GT(dp2.dp_comm_s, 0.0);
  // dp 4 on 2 cores: one micro-batch each on one thread (half the compute
  // of dp 2), but two ranks per core: sharing doubles the busy time.
  q.dp = 4;
  q.micro_batches = 1;
  const StepTime dp4 = predict_step_time(q, d);
  EXPECT_NEAR(dp4.compute_s, one.compute_s / 2, 1e-9);
  EXPECT_DOUBLE_EQ(dp4.optimizer_s, dp2.optimizer_s);
  EXPECT_NEAR(dp4.total_s, 2 * (dp4.total_s - dp4.core_sharing_s), 1e-12);
  EXPECT_EQ(dp2.core_sharing_s, 0.0);
  // pp 2 x dp 2 on 2 cores: the bubble is filled by the other ranks' work.
  q.dp = 2;
  q.pp = 2;
  q.micro_batches = 2;
  const StepTime pp = predict_step_time(q, d);
  ASSERT_GT(pp.pp_bubble_s, 0.0);
  EXPECT_NEAR(pp.total_s, 2 * (pp.total_s - pp.core_sharing_s - pp.pp_bubble_s), 1e-12);
}

// llama-tiny with 4 experts, top-2, 4 sequences of 128 a micro-batch, fp32.
MemoryQuery tiny_moe_query(int dp, int ep, int64_t micro_batches) {
  MemoryQuery q = tiny_query(micro_batches);
  q.model.moe.num_experts = 4;
  q.model.moe.topk = 2;
  q.dp = dp;
  q.ep = ep;
  return q;
}

// Under ep the group waits at each dispatch for its busiest rank: with a
// measured load of 1.5 at ep 2 the experts' linears get 1.5 x the mean rows
// and the step gains exactly the extra they cost; an ep size without a
// measurement, and ep 1, are priced evenly.
TEST(StepTime, ExpertParallelWaitsForTheBusiestRank) {
  const DeviceProfile d = two_core_profile();
  MemoryQuery q = tiny_moe_query(/*dp=*/2, /*ep=*/2, /*micro_batches=*/2);
  const StepTime even = predict_step_time(q, d);
  EXPECT_EQ(even.ep_imbalance_s, 0.0);
  q.ep_max_load = {{2, 1.5}, {4, 2.0}};
  const StepTime busy = predict_step_time(q, d);

  // Expert rows: 512 routed rows x top-2 over 2 local experts, x 1.5.
  const int64_t F = q.model.moe.expert_intermediate(q.model.intermediate);
  const auto has_rows = [&](const StageWork& w, int64_t rows) {
    for (const LinearWork& l : w.linears)
      if (l.in == F && l.out == q.model.hidden && l.rows == rows) return true;
    return false;
  };
  EXPECT_TRUE(has_rows(end_stage_works(q)[0], 768));
  MemoryQuery plain = q;
  plain.ep_max_load.clear();
  EXPECT_TRUE(has_rows(end_stage_works(plain)[0], 512));
  const StageSeconds a = price_stage(end_stage_works(q)[0], d.ops[0]);
  const StageSeconds b = price_stage(end_stage_works(plain)[0], d.ops[0]);
  const double extra = (a.matmul_s + a.elementwise_s - b.matmul_s - b.elementwise_s) * 2;
  ASSERT_GT(extra, 0.0);
  EXPECT_NEAR(busy.ep_imbalance_s, extra, 1e-12);
  EXPECT_DOUBLE_EQ(busy.compute_s, even.compute_s);
  // The busiest rank also receives 1.5 x the rows (the latency terms stay).
  EXPECT_GT(busy.ep_comm_s, even.ep_comm_s);
  EXPECT_LT(busy.ep_comm_s, 1.5 * even.ep_comm_s);
  EXPECT_GT(busy.total_s, even.total_s + extra);

  q.ep = 1;  // one rank holds every expert: nothing to wait for
  q.ep_max_load = {{2, 1.5}};
  EXPECT_EQ(predict_step_time(q, d).ep_imbalance_s, 0.0);
  q.ep = 2;
  q.ep_max_load = {{4, 2.0}};  // ep 2 not measured: even
  EXPECT_EQ(predict_step_time(q, d).ep_imbalance_s, 0.0);

  // The analytic (uncalibrated) path: 0.5 x the experts' matmul FLOPs.
  DeviceProfile a100 = builtin_profile("a100-80gb");
  q.ep_max_load = {{2, 1.5}};
  q.precision = a100.precision;
  const double expert_flops = 6.0 * 2 * 3 * q.model.hidden * F * q.model.n_layers * 128 * 4 * 2;
  EXPECT_NEAR(predict_step_time(q, a100).ep_imbalance_s,
              0.5 * expert_flops / a100.gemm_flops(static_cast<double>(F)), 1e-15);
}

// Zero-bubble W is the deferred dW of the tp linears only (half of their
// calibrated backward); the router, the routed experts and the LM head keep
// their dW in B. The ZB-H1 bubble is (p-1)(F + B) of a micro-batch's stage
// time with one micro-batch and (p-1)(F + B - W) with pp or more.
TEST(StepTime, ZeroBubbleDefersOnlyTheTpLinearsWeightGradients) {
  const DeviceProfile d = two_core_profile();
  const OpCosts& c = d.ops[0];
  const auto shares = [&](const MemoryQuery& q) {
    StageSeconds worst;
    for (const StageWork& w : end_stage_works(q)) {
      const StageSeconds p = price_stage(w, c);
      EXPECT_NEAR(p.forward_s + p.backward_s + p.weight_s, p.matmul_s + p.elementwise_s,
                  1e-12 * p.matmul_s);
      double deferred_bwd = 0;
      for (const LinearWork& l : w.linears)
        if (l.deferred_dw) deferred_bwd += l.calls * c.linear_bwd_s(l.rows, l.in, l.out);
      EXPECT_NEAR(p.weight_s, deferred_bwd / 2, 1e-15);
      if (p.matmul_s + p.elementwise_s > worst.matmul_s + worst.elementwise_s) worst = p;
    }
    return worst;
  };
  MemoryQuery dense = tiny_moe_query(/*dp=*/1, /*ep=*/1, /*micro_batches=*/1);
  dense.model.moe.num_experts = 0;
  dense.pp = 2;
  dense.schedule = pipeline::ScheduleKind::ZeroBubbleH1;
  MemoryQuery moe = tiny_moe_query(/*dp=*/1, /*ep=*/1, /*micro_batches=*/1);
  moe.pp = 2;
  moe.schedule = pipeline::ScheduleKind::ZeroBubbleH1;
  const StageSeconds ds = shares(dense), ms = shares(moe);
  const auto total = [](const StageSeconds& p) { return p.forward_s + p.backward_s + p.weight_s; };
  EXPECT_LT(ms.weight_s / total(ms), 0.5 * ds.weight_s / total(ds));
  // The last stage's LM head is in B, not W.
  const StageWork last = end_stage_works(dense)[1];
  const int64_t V = dense.model.vocab_size;
  EXPECT_TRUE(std::any_of(last.linears.begin(), last.linears.end(),
                          [&](const LinearWork& l) { return l.out == V && !l.deferred_dw; }));

  // pp 2 x dp 1: a rank per core, so the bubble is the critical path's.
  for (const MemoryQuery* q : {&dense, &moe}) {
    const StageSeconds p = shares(*q);
    const double f = p.forward_s / total(p), b = p.backward_s / total(p), w = p.weight_s / total(p);
    for (int64_t micro : {1, 2}) {
      MemoryQuery m = *q;
      m.micro_batches = micro;
      const StepTime t = predict_step_time(m, d);
      EXPECT_EQ(t.core_sharing_s, 0.0);
      const double stage = (t.compute_s + t.elementwise_s + t.tp_comm_s + t.cp_comm_s +
                            t.ep_comm_s + t.ep_imbalance_s) /
                           static_cast<double>(micro);
      const double want = micro == 1 ? f + b : f + b - w;
      EXPECT_NEAR(t.pp_bubble_s, want * stage, 1e-12 * stage) << "micro-batches " << micro;
    }
  }
}

// Calibrated ranks that own their cores wait at every blocking collective
// for the last of their group (plan/arrival_wait.h): tp 2 with sp has two
// per all-reduce equivalent (4 a layer and micro-batch), dp once a step and
// ZeRO-1 once more after the update; the work between is spread evenly
// over them. Ranks sharing cores (dp 4 on 2) yield instead: no wait. A
// built-in profile has no jitter.
TEST(StepTime, BlockingCollectivesWaitForTheLastRank) {
  DeviceProfile d = two_core_profile();
  d.arrival_jitter = 0.02;
  MemoryQuery q = tiny_query(2);
  q.tp = 2;
  q.sequence_parallel = true;
  const StepTime tp = predict_step_time(q, d);
  const double tp_syncs = 4.0 * 2 * q.model.n_layers * 2;
  EXPECT_DOUBLE_EQ(tp.syncs, tp_syncs);
  const double work = tp.compute_s + tp.elementwise_s;
  EXPECT_NEAR(tp.sync_wait_s, tp_syncs * arrival_wait_s(0.02, work / tp_syncs, 2), 1e-15);
  DeviceProfile still = d;
  still.arrival_jitter = 0;
  const StepTime calm = predict_step_time(q, still);
  EXPECT_EQ(calm.sync_wait_s, 0.0);
  EXPECT_NEAR(tp.total_s - calm.total_s, tp.sync_wait_s, 1e-12);
  q.sequence_parallel = false;  // one all-reduce each: half the waits, each longer
  const StepTime no_sp = predict_step_time(q, d);
  EXPECT_DOUBLE_EQ(no_sp.syncs, tp_syncs / 2);
  const double no_sp_work = no_sp.compute_s + no_sp.elementwise_s;
  EXPECT_NEAR(no_sp.sync_wait_s,
              tp_syncs / 2 * arrival_wait_s(0.02, no_sp_work / (tp_syncs / 2), 2), 1e-15);
  EXPECT_LT(no_sp.sync_wait_s, tp.sync_wait_s);

  q.tp = 1;
  q.dp = 2;
  q.micro_batches = 1;
  const StepTime dp = predict_step_time(q, d);
  EXPECT_DOUBLE_EQ(dp.syncs, 1.0);
  EXPECT_NEAR(dp.sync_wait_s, arrival_wait_s(0.02, dp.compute_s + dp.elementwise_s, 2), 1e-15);
  q.zero = 1;
  const StepTime z1 = predict_step_time(q, d);
  EXPECT_DOUBLE_EQ(z1.syncs, 2.0);
  EXPECT_NEAR(z1.sync_wait_s, dp.sync_wait_s, 1e-15);

  q.zero = 0;
  q.dp = 4;  // 4 one-thread ranks on 2 cores
  const StepTime shared = predict_step_time(q, d);
  ASSERT_GT(shared.core_sharing_s, 0.0);
  EXPECT_EQ(shared.sync_wait_s, 0.0);
  EXPECT_DOUBLE_EQ(shared.syncs, 1.0);

  q.dp = 1;
  q.tp = 2;
  EXPECT_EQ(predict_step_time(q, builtin_profile("a100-80gb")).sync_wait_s, 0.0);
}

// An ep group on shared cores waits for its busiest rank at every
// dispatch while the cores serve the group round robin.
TEST(StepTime, EpGroupOnSharedCoresIsServedRoundRobin) {
  const DeviceProfile d = two_core_profile();  // 1 and 2 threads on 2 cores
  MemoryQuery q = tiny_moe_query(/*dp=*/4, /*ep=*/4, /*micro_batches=*/1);  // a thread a rank
  q.ep_max_load = {{4, 1.8}};
  const StepTime t = predict_step_time(q, d);
  ASSERT_GT(t.ep_imbalance_s, 0.0);
  const double e = t.ep_imbalance_s / 0.8;  // a rank's mean expert work
  const double critical = t.total_s - t.core_sharing_s;
  const double busy = critical - t.ep_imbalance_s;
  // The busiest rank's 1.8 e and three of (4 - 1.8) / 3 e, round robin on
  // 2 cores, against 2 e for an even share.
  const double uneven =
      processor_sharing_s({1.8 * e, 2.2 / 3 * e, 2.2 / 3 * e, 2.2 / 3 * e}, 1, 2) - 2 * e;
  EXPECT_NEAR(uneven, (2.2 / 3 / 0.5 + (1.8 - 2.2 / 3) - 2) * e, 1e-12);
  EXPECT_NEAR(t.total_s, std::max(critical, 2 * busy + uneven), 1e-12);
  // Even loads pack: the 4 ranks' busy time over 2 cores, nothing more.
  q.ep_max_load.clear();
  const StepTime even = predict_step_time(q, d);
  EXPECT_EQ(even.ep_imbalance_s, 0.0);
  EXPECT_NEAR(even.total_s, 2 * (even.total_s - even.core_sharing_s), 1e-12);
}

}  // namespace
}  // namespace parallm
