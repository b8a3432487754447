// The memory model's experts (plan/moe_memory.h) on Mixtral-8x7B: the
// parameters held per rank under ep and tp add back to the published 46.7B
// total, the active parameters behind MFU are the published 12.9B, ZeRO
// under ep shards expert state (ZeRO-2: gradients, ZeRO-3: values too) over
// expert-dp, the layouts the trainer refuses are refused with its messages
// and not suggested, and the even-load assumption's
// assignments per token follow capacity. (The allocator comparison is
// tests/plan/moe_memory_dist.cpp.)
#include <gtest/gtest.h>

#include <cmath>

#include "model/model_catalog.h"
#include "plan/flops.h"
#include "plan/memory_model.h"
#include "plan/memory_report.h"
#include "plan/moe_memory.h"

namespace parallm {
namespace {

constexpr int64_t kMixtralTotal = 46702792704;  // published: 46.7B (model_catalog_test)

MemoryQuery mixtral(int tp, int dp, int ep) {
  MemoryQuery q;
  q.model = catalog_model("mixtral-8x7b");
  q.seq_len = 4096;
  q.tp = tp;
  q.dp = dp;
  q.ep = ep;
  q.sequence_parallel = tp > 1;
  return q;
}

TEST(MoeMemory, MixtralParametersPerRankAddBackToThePublishedTotal) {
  const ModelConfig m = catalog_model("mixtral-8x7b");
  const int64_t C = 4096, L = 32, E = 8;
  const int64_t experts = L * E * 3 * C * 14336;  // gate, up, down per expert
  const MemoryBreakdown one = estimate_memory(mixtral(1, 1, 1));
  EXPECT_EQ(one.params_per_rank, kMixtralTotal);
  EXPECT_EQ(one.params_per_rank, m.num_parameters());
  EXPECT_EQ(one.expert_params_per_rank, experts);
  // ep 8: every rank one expert per layer; the dense rest replicated.
  const MemoryBreakdown ep8 = estimate_memory(mixtral(1, 8, 8));
  EXPECT_EQ(ep8.expert_params_per_rank * 8, experts);
  EXPECT_EQ(ep8.params_per_rank - ep8.expert_params_per_rank + 8 * ep8.expert_params_per_rank,
            kMixtralTotal);
  // tp 2 x ep 4: experts whole on both tp ranks (expert tp 1), the dense
  // part split but for what tp replicates: norms (2 per layer + the final
  // one) and the routers (E x C per layer).
  const MemoryBreakdown tp2 = estimate_memory(mixtral(2, 4, 4));
  EXPECT_EQ(tp2.expert_params_per_rank * 4, experts);
  const int64_t replicated = (2 * L + 1) * C + L * E * C;
  const int64_t dense = tp2.params_per_rank - tp2.expert_params_per_rank;
  EXPECT_EQ(2 * dense - replicated + experts, kMixtralTotal);
  EXPECT_NEAR(static_cast<double>(kMixtralTotal), 46.7e9, 0.05e9);
  // tp 2 x expert tp 2 x ep 4: each rank half of each of its 2 experts
  // (SwiGLU: no biases), the dense part as at expert tp 1.
  MemoryQuery etp = mixtral(2, 4, 4);
  etp.expert_tp = 2;
  const MemoryBreakdown split = estimate_memory(etp);
  EXPECT_EQ(split.expert_params_per_rank * 4 * 2, experts);
  EXPECT_EQ(split.params_per_rank - split.expert_params_per_rank, dense);
  // cp 2 x dp 2 x ep 4: the same ranks' experts as dp 4 x ep 4.
  MemoryQuery cp = mixtral(2, 2, 4);
  cp.cp = 2;
  EXPECT_EQ(estimate_memory(cp).params_per_rank, tp2.params_per_rank);
}

TEST(MoeMemory, MixtralActiveParametersAreThePublished12Point9B) {
  const ModelConfig m = catalog_model("mixtral-8x7b");
  // Matmuls a token runs (router, top-2 experts, attention, LM head) plus
  // its embedding row: Mistral's "12.9B active parameters".
  const double active = static_cast<double>(matmul_parameters(m) + m.vocab_size * m.hidden);
  EXPECT_NEAR(active, 12.9e9, 0.05e9);
  // Experts narrower than the dense MLP (Qwen2-MoE's moe_intermediate_size)
  // count at their own width.
  ModelConfig narrow = m;
  narrow.moe.ffn_hidden_size = 14336 / 4;
  EXPECT_EQ(block_matmul_parameters(m) - block_matmul_parameters(narrow),
            32 * 2 * 3 * int64_t{4096} * (14336 - 14336 / 4));
}

TEST(MoeMemory, ZeroOneShardsExpertStateOverExpertDp) {
  // dp 8, ep 2: dense state over 8 ranks, expert state over expert-dp 4.
  MemoryQuery q = mixtral(1, 8, 2);
  q.zero = 1;
  q.precision = Precision::FP32;
  const MemoryBreakdown r = estimate_memory(q);
  const double dense = static_cast<double>(r.params_per_rank - r.expert_params_per_rank);
  const double experts = static_cast<double>(r.expert_params_per_rank);
  EXPECT_DOUBLE_EQ(r.optimizer, 8.0 * (dense / 8 + experts / 4));
  // The Parallm model walks the padded flat buffer for the most loaded
  // rank: its dp shard's dense elements (rank 0's holds the embedding, so
  // more than the mean) and its expert-dp shard of the experts: at least
  // the mean, at most a whole dp shard plus an expert-dp shard. Padding: at
  // most 15 elements for each of Mixtral's 1 + 32 x 10 + 2 tensors.
  const double padding = 8.0 * (15.0 * 323 + 1);
  q.activation_model = ActivationModel::Parallm;
  const MemoryBreakdown p = estimate_memory(q);
  EXPECT_GE(p.optimizer, 8.0 * (dense / 8 + experts / 4));
  EXPECT_LE(p.optimizer, 8.0 * ((dense + experts) / 8 + experts / 4) + padding);
  EXPECT_GT(p.optimizer, 8.0 * (dense / 8 + experts / 4) + 1e6) << "rank 0's embedding";
  // Without ep the experts are sharded over dp like every other element.
  q.ep = 1;
  EXPECT_NEAR(estimate_memory(q).optimizer, 8.0 * static_cast<double>(kMixtralTotal) / 8, padding);
}

TEST(MoeMemory, ZeroOneUnderEpOwnsDenseDpShardsAndExpertDpShards) {
  // Flat buffer (16-float slots): dense 20 [0, 32), expert 16 [32, 48),
  // expert 16 [48, 64) (merged with the previous range), dense 5 [64, 80).
  // dp 4 (shards of 20), ep 2: expert-dp 2 (shards of 16 expert elements).
  const std::vector<LayerTensor> t = {
      {.numel = 20}, {.numel = 16, .expert = true}, {.numel = 16, .expert = true}, {.numel = 5}};
  // rank 0: dense [0, 20) + experts 16 = 36; rank 1: dense [20, 32) + 16 =
  // 28; rank 2: [40, 60) all experts, + 16 = 16; rank 3: dense [64, 80) + 16.
  EXPECT_EQ(zero1_ep_owned(t, 16, 4, 2), 36);
  // ep 4: expert-dp 1, every rank owns all 32 expert elements.
  EXPECT_EQ(zero1_ep_owned(t, 16, 4, 4), 20 + 32);
}

TEST(MoeMemory, ZeroUnderCpShardsOverDpTimesCp) {
  // cp 2 x dp 2 x ep 2 shards as dp 4 x ep 2: dense over the 4 ranks of
  // dp x cp, experts over expert-dp 2, for the optimizer (ZeRO-1), the
  // gradients (ZeRO-2) and the values (ZeRO-3).
  MemoryQuery q = mixtral(1, 2, 2);
  q.cp = 2;
  q.precision = Precision::FP32;
  q.activation_model = ActivationModel::Parallm;
  MemoryQuery d = mixtral(1, 4, 2);
  d.precision = Precision::FP32;
  d.activation_model = ActivationModel::Parallm;
  for (int zero : {1, 2, 3}) {
    q.zero = d.zero = zero;
    const MemoryBreakdown a = estimate_memory(q), b = estimate_memory(d);
    EXPECT_EQ(a.parameters, b.parameters) << zero;
    EXPECT_EQ(a.gradients, b.gradients) << zero;
    EXPECT_EQ(a.optimizer, b.optimizer) << zero;
  }
  // Activations: seq_len / cp tokens per rank, capacity per whole sequence.
  q.zero = d.zero = 0;
  MemoryQuery half = d;
  half.seq_len = q.seq_len / 2;
  EXPECT_EQ(estimate_memory(q).activations, estimate_memory(half).activations);
  // Ring attention's five key/value blocks of B x seq_len / cp x kv width
  // (8 kv heads of 128), each with an 8-byte post-time stamp per (key chunk,
  // kv head): two chunks of one batch entry.
  EXPECT_EQ(estimate_memory(q).communication, 4.0 * 10 * 2048 * 8 * 128 + 5 * 2 * 8 * 8);
}

TEST(MoeMemory, RefusesWhatTheTrainerRefuses) {
  auto message = [](MemoryQuery q) {
    try {
      estimate_memory(q);
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  MemoryQuery q = mixtral(1, 4, 2);
  q.activation_model = ActivationModel::Parallm;
  q.precision = Precision::FP32;
  q.zero = 3;  // counted: values, gradients and state over the same owned spans
  EXPECT_EQ(message(q), "");
  const MemoryBreakdown z3 = estimate_memory(q);
  q.zero = 2;  // counted: gradients over the same owned spans as the optimizer
  EXPECT_EQ(message(q), "");
  const MemoryBreakdown z2 = estimate_memory(q);
  q.zero = 1;
  const MemoryBreakdown z1 = estimate_memory(q);
  // dp 4, expert-dp 2: dense gradients a quarter, experts' (most of them) a half.
  EXPECT_LT(z2.gradients, z1.gradients / 2);
  EXPECT_GT(z2.gradients, z1.gradients / 4);
  EXPECT_EQ(z2.optimizer, z1.optimizer);
  // ZeRO-3 holds the values of exactly the elements whose gradients ZeRO-2
  // holds (fp32: 4 bytes each), and a second set of unit buffers.
  EXPECT_EQ(z3.parameters, z2.gradients);
  EXPECT_EQ(z3.gradients, z2.gradients);
  EXPECT_EQ(z3.optimizer, z2.optimizer);
  EXPECT_EQ(z3.communication, 2 * z2.communication);
  EXPECT_LT(z3.parameters, z1.parameters / 2);
  q.zero = 1;
  q.optimizer = OptimizerKind::Muon;
  EXPECT_NE(message(q).find("element-wise optimizer"), std::string::npos) << message(q);
  EXPECT_NE(message(mixtral(1, 6, 3)).find("not divisible by ep"), std::string::npos);
  EXPECT_NE(message(mixtral(1, 2, 4)).find("must divide data parallel size"), std::string::npos);
  // MoE under cp is counted (every cp rank routes whole sequences); ep
  // divides dp x cp, as the trainer checks it.
  MemoryQuery cp = mixtral(1, 1, 2);
  cp.cp = 2;
  EXPECT_EQ(message(cp), "");
  cp.ep = 4;
  EXPECT_NE(message(cp).find("must divide data parallel size (--dp 1) x context parallel size "
                             "(--cp 2) = 2"),
            std::string::npos)
      << message(cp);
  // Expert tp: 1 or tp, with an element-wise optimizer and ZeRO 0-2.
  MemoryQuery etp = mixtral(2, 2, 2);
  etp.expert_tp = 2;
  etp.zero = 2;
  EXPECT_EQ(message(etp), "");
  etp.zero = 3;
  EXPECT_NE(message(etp).find("DDP or ZeRO-1/2 only"), std::string::npos) << message(etp);
  etp.zero = 1;
  etp.optimizer = OptimizerKind::Muon;
  EXPECT_NE(message(etp).find("with muon"), std::string::npos) << message(etp);
  etp.optimizer = OptimizerKind::AdamW;
  etp.expert_tp = 4;
  EXPECT_NE(message(etp).find("--expert-tp equal to --tp (2) only"), std::string::npos)
      << message(etp);
  MemoryQuery dense = mixtral(1, 2, 2);
  dense.model = catalog_model("llama2-7b");
  EXPECT_NE(message(dense).find("needs an MoE model"), std::string::npos);
  // ZeRO-2/3 at ep 1 run (the experts are then ordinary dp-replicated tensors).
  MemoryQuery plain = mixtral(1, 8, 1);
  plain.zero = 3;
  EXPECT_GT(estimate_memory(plain).total(), 0.0);
}

TEST(MoeMemory, EvenLoadAssignmentsPerTokenFollowCapacity) {
  MoeConfig m;
  m.num_experts = 4;
  m.topk = 2;
  EXPECT_DOUBLE_EQ(moe_assignments_per_token(m, 16), 2.0);  // dropless
  m.capacity_factor = 1.0;
  EXPECT_DOUBLE_EQ(moe_assignments_per_token(m, 16), 2.0);  // capacity 8 = the even share
  m.capacity_factor = 0.5;
  EXPECT_DOUBLE_EQ(moe_assignments_per_token(m, 16), 1.0);  // 4 of each expert's 8 kept
  m.capacity_factor = 0.3;                                  // ceil(16 * 2 * 0.3 / 4) = 3
  EXPECT_DOUBLE_EQ(moe_assignments_per_token(m, 16), 4.0 * 3 / 16);
}

TEST(MoeMemory, MegatronActivationsCountTheExperts) {
  // One MoE layer per the stated formula (docs/memory.md "Experts"): 16-bit,
  // tp 1, no recompute, SwiGLU experts: the dense layer's sbh(34 + 5as/h)
  // with the MLP's 19 sbh replaced by 3sbh + 4sbE + k sb (4h + 6 I_e).
  MemoryQuery q = mixtral(1, 1, 1);
  q.model.n_layers = 1;
  q.seq_len = 1024;
  const double s = 1024, h = 4096, a = 32, E = 8, k = 2, I = 14336;
  const double want =
      s * h * (34 + 5 * a * s / h) - 19 * s * h + 3 * s * h + 4 * s * E + k * s * (4 * h + 6 * I);
  const MemoryBreakdown r = estimate_memory(q);
  EXPECT_NEAR(r.activations, want, 1e-12 * want);
  EXPECT_NEAR(r.activation_per_layer, want, 1e-12 * want);
  // Under tp 2 + sp the experts' tokens split like everything else.
  q.tp = 2;
  q.sequence_parallel = true;
  const double sp = s * h * (17 + 5 * a * s / (h * 2)) - 19 * s * h / 2 +
                    (3 * s * h + 4 * s * E + k * s * (4 * h + 6 * I)) / 2;
  EXPECT_NEAR(estimate_memory(q).activations, sp, 1e-12 * sp);
  // Under expert tp 2 every tp rank feeds all s tokens through I / 2.
  q.expert_tp = 2;
  const double etp = s * h * (17 + 5 * a * s / (h * 2)) - 19 * s * h / 2 +
                     (3 * s * h + 4 * s * E) / 2 + k * s * (4 * h + 6 * I / 2);
  EXPECT_NEAR(estimate_memory(q).activations, etp, 1e-12 * etp);
}

TEST(MoeMemory, ReportPrintsTheMixtralBreakdown) {
  MemoryQuery q = mixtral(2, 8, 8);
  q.pp = 4;
  q.micro_batches = 8;
  const std::string text = memory_report_text(q, "mixtral-8x7b", 80.0 * (1 << 30));
  EXPECT_NE(text.find("mixtral-8x7b: 46.70B parameters"), std::string::npos) << text;
  EXPECT_NE(text.find("ep 8"), std::string::npos) << text;
  EXPECT_NE(text.find("experts: 1409286144 of the parameters held"), std::string::npos) << text;
  // Suggestions are layouts the trainer runs: ZeRO-2/3 under ep (expert-dp
  // 4 at dp 8 x ep 2 shards the experts' values too), but not with Muon,
  // whose ZeRO shards under ep are refused.
  MemoryQuery e2 = mixtral(2, 8, 2);
  e2.pp = 4;
  e2.micro_batches = 8;
  e2.recompute = Recompute::Full;
  const std::string fits = memory_report_text(e2, "mixtral-8x7b", 40.0 * (1 << 30));
  EXPECT_NE(fits.find("fits with --zero 3"), std::string::npos) << fits;
  e2.optimizer = OptimizerKind::Muon;
  const std::string muon = memory_report_text(e2, "mixtral-8x7b", 40.0 * (1 << 30));
  EXPECT_EQ(muon.find("--zero"), std::string::npos) << muon;
}

TEST(MoeMemory, SuggestionsUnderExpertTpAndCpAreLayoutsTheTrainerRuns) {
  // Expert tp runs with ZeRO 0-2 only, and follows tp when tp doubles; ep
  // must still divide dp x cp when dp halves.
  MemoryQuery q = mixtral(2, 4, 4);
  q.cp = 2;
  q.pp = 4;
  q.micro_batches = 8;
  q.expert_tp = 2;
  for (const MemorySuggestion& s : suggest_fits(q, 1.0)) ADD_FAILURE() << s.change;  // none fit
  bool tp_doubled = false;
  for (const MemorySuggestion& s : suggest_fits(q, estimate_memory(q).total() - 1.0)) {
    tp_doubled |= s.query.tp == 4;
    EXPECT_LE(s.query.zero, 2) << s.change;
    EXPECT_EQ(s.query.expert_tp, s.query.tp) << s.change;
    EXPECT_EQ(s.query.dp * s.query.cp % s.query.ep, 0) << s.change;
    EXPECT_NO_THROW(s.query.validate()) << s.change;
  }
  EXPECT_TRUE(tp_doubled);
}

}  // namespace
}  // namespace parallm
