// Tensor-parallel communication volume equals the analytical count (issue
// #5, point 2), as the tp communicator counts it (comm/comm_counters.h: the
// payload this rank hands to the op: the all-reduce buffer, the all-gather's
// local block N*C/t, the reduce-scatter's full input N*C) and splits it by
// op kind (tp_traffic: all-gather and reduce-scatter are "sp", the rest
// "tp"). One forward_backward of a micro-batch of N = B*T tokens, hidden C,
// L layers, F = 4 bytes:
//   plain tp (all-reduces only, "tp" bytes):
//     F * ( L * 4*N*C    per layer: attention and MLP, one forward and one
//                        backward all-reduce of B x T x hidden each
//         + N*C          vocab-parallel embedding, forward all-reduce
//         + N*C          LM head input gradient, backward all-reduce
//         + 3*N )        vocab-parallel cross-entropy: row max, then
//                        (sum-exp, target logit), per chunk of LM-head rows
//   sequence parallel, "sp" bytes (the all-gathers and reduce-scatters):
//     F * ( L * 2 * (N*C/t + N*C       forward all-gather + reduce-scatter
//                  + 2*N*C/t + N*C)    backward all-gather of the output
//                                      gradient and re-gather of the input,
//                                      reduce-scatter of the input gradient
//         + N*C + N*C/t                embedding: reduce-scatter, all-gather
//         + N*C/t + N*C )              head: all-gather, reduce-scatter
//   and "tp" bytes, the all-reduces left: the 3*N loss term and the
//   partial-gradient sync of the replicated parameters that saw only the
//   slice (norms, row-parallel biases, position table), one per unit.
// In ring-transfer terms an all-gather plus a reduce-scatter moves what one
// all-reduce does, so the sp layer moves 5/4 of the plain layer (the extra
// is the input re-gather in backward, which saves the full input).
// A training step adds micro-batches x this, plus the tp sum of the
// gradient norm's squares (one double, one all-reduce).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "model/transformer.h"
#include "tp_env.h"

namespace parallm::tp_test {
namespace {

struct Volume {
  int64_t tp_bytes = 0, sp_bytes = 0, tp_ops = 0, sp_ops = 0;
};

// The LM head computes the loss a chunk of rows at a time, at least two
// chunks of at least 16 rows (LmHead::chunk_rows; with these small
// vocabularies the 32 MiB logits cap never binds), and the vocab-parallel
// cross-entropy all-reduces twice per chunk: 3*N floats in 2 * chunks ops.
int64_t loss_ops(int64_t N) {
  const int64_t rows = std::clamp<int64_t>((N + 1) / 2, 16, std::max<int64_t>(N, 1));
  const int64_t chunks = (N + rows - 1) / rows;
  return 2 * chunks;
}

Volume expected_volume(const ModelConfig& m, int t, bool sp, int64_t N) {
  const int64_t F = sizeof(float), C = m.hidden, L = m.n_layers, NC = N * C;
  Volume v;
  if (!sp) {
    v.tp_bytes = F * (L * 4 * NC + NC + NC + 3 * N);
    v.tp_ops = L * 4 + 1 + 1 + loss_ops(N);
    return v;
  }
  v.sp_bytes = F * (L * 2 * (3 * NC / t + 2 * NC) + 2 * (NC + NC / t));
  // 5 per sublayer, 2 embedding, 2 head.
  v.sp_ops = L * 10 + 2 + 2;
  const int64_t norm = m.uses_layernorm() ? 2 * C : C;  // weight (+ bias)
  const int64_t block_partial = 2 * norm + (m.uses_bias() ? 2 * C : 0);
  const int64_t embed_partial = m.uses_learned_positions() ? m.max_positions * C : 0;
  const int64_t partial = L * block_partial + embed_partial + norm;
  v.tp_bytes = F * (3 * N + partial);
  // The loss's, one partial sync per unit holding partial gradients (every
  // block, the tail, the embedding with positions).
  v.tp_ops = loss_ops(N) + L + 1 + (embed_partial > 0 ? 1 : 0);
  return v;
}

Volume volume_of(const comm::CommCounters& c) {
  const TpTraffic t = tp_traffic(c);
  return {t.tp.bytes, t.sp.bytes, t.tp.ops, t.sp.ops};
}

ModelConfig family(const std::string& f, int layers) {
  ModelConfig m = f == "gpt2" ? tp_gpt2() : tp_llama();
  m.n_layers = layers;
  return m;
}

// Runs one micro-batch on the first t ranks of the world; returns what the
// tp communicator counted (zeros on ranks outside).
Volume measure(const ModelConfig& m, int t, bool sp, int64_t B, int64_t T) {
  comm::Communicator* world = env().world;
  const bool in = world->rank() < t;
  auto sub = world->split(in ? 0 : -1, world->rank(), "tp_volume");
  if (!in) return {};
  Allocator alloc;
  TpGroup tp{.comm = sub.get(), .sequence_parallel = sp};
  Transformer model(m, alloc, tp);
  model.params().init_random(3);
  std::vector<int32_t> x(B * T), y(B * T);
  for (int64_t i = 0; i < B * T; ++i) x[i] = (i * 37) % 1000, y[i] = (i * 53 + 1) % 1000;
  const comm::CommCounters before = sub->counters();
  model.forward_backward(x.data(), y.data(), B, T, 1.0 / double(B * T));
  return volume_of(sub->counters() - before);
}

TEST(TensorParallelCommVolume, MatchesAnalyticalCountPerLayer) {
  const int world = env().world->size();
  if (world < 2) GTEST_SKIP() << "needs tp >= 2";
  const int64_t B = 2, T = 16, N = B * T;
  for (int t : {2, 4}) {
    if (t > world) continue;
    for (const char* f : {"gpt2", "llama"})
      for (bool sp : {false, true}) {
        Volume by_layers[2];
        for (int li = 0; li < 2; ++li) {
          const int layers = li == 0 ? 1 : 3;
          const ModelConfig m = family(f, layers);
          const Volume got = measure(m, t, sp, B, T);
          if (env().world->rank() >= t) continue;
          const Volume want = expected_volume(m, t, sp, N);
          const std::string what = fmt::format("{} tp {} sp {} layers {}", f, t, sp, layers);
          EXPECT_EQ(got.tp_bytes, want.tp_bytes) << what;
          EXPECT_EQ(got.sp_bytes, want.sp_bytes) << what;
          EXPECT_EQ(got.tp_ops, want.tp_ops) << what;
          EXPECT_EQ(got.sp_ops, want.sp_ops) << what;
          by_layers[li] = got;
        }
        if (env().world->rank() >= t) continue;
        // Per layer (the difference of 3 and 1 layers, halved): the issue's
        // count, 4 x B*T*hidden all-reduced (plain), or its sp equivalent.
        const int64_t NC = N * tp_gpt2().hidden, F = sizeof(float);
        const int64_t per_layer_tp = (by_layers[1].tp_bytes - by_layers[0].tp_bytes) / 2;
        const int64_t per_layer_sp = (by_layers[1].sp_bytes - by_layers[0].sp_bytes) / 2;
        if (!sp) {
          EXPECT_EQ(per_layer_tp, 4 * NC * F) << f << " tp " << t;
          EXPECT_EQ(per_layer_sp, 0);
        } else {
          // The partial gradients of a block: GPT-2's two LayerNorms
          // (weight, bias) and two row-parallel biases, LLaMA's two RMSNorms.
          const int64_t partial =
              std::string(f) == "gpt2" ? 6 * tp_gpt2().hidden : 2 * tp_llama().hidden;
          EXPECT_EQ(per_layer_tp, F * partial) << f << " tp " << t;
          EXPECT_EQ(per_layer_sp, F * 2 * (3 * NC / t + 2 * NC)) << f << " tp " << t;
        }
      }
  }
}

// A training step (Trainer, gradient accumulation over 12 micro-batches of
// 2 x 16 tokens) reports micro-batches x the count, plus the tp sum of the
// gradient norm (one double).
TEST(TensorParallelCommVolume, StepCountersAreMicroBatchesTimesCount) {
  if (env().world->size() < 2) GTEST_SKIP() << "needs tp >= 2";
  for (bool sp : {false, true}) {
    const ModelConfig m = tp_llama();
    const TpRunResult r = tp_train_run(m, TpLayout{.tp = 2, .dp = 1, .sp = sp}, 2);
    if (env().world->rank() >= 2) continue;
    const Volume want = expected_volume(m, 2, sp, 2 * 16);
    const int64_t micro = 24 / 2;
    ASSERT_EQ(r.tp_bytes.size(), 2u);
    for (size_t s = 0; s < r.tp_bytes.size(); ++s) {
      EXPECT_EQ(r.tp_bytes[s], micro * want.tp_bytes + int64_t(sizeof(double))) << "sp " << sp;
      EXPECT_EQ(r.sp_bytes[s], micro * want.sp_bytes) << "sp " << sp;
    }
  }
}

}  // namespace
}  // namespace parallm::tp_test
