// Activation memory per rank under tensor and sequence parallelism (issue
// #5, point 3), measured from the allocator: the peak of MemTag::Activation
// over one forward (forward_loss; every saved tensor is alive at its end,
// the head and collectives use Workspace).
// Megatron (Korthikanti et al., "Reducing Activation Recomputation"): per
// layer 34sbh + 5as^2b bytes (16-bit); tp alone gives sbh(10 + 24/t) + ...,
// tp + sp gives sbh * 34/t + ...: the activations outside attention and MLP
// (the 10sbh of norms, dropout and residual inputs) are divided by t too.
// Ours (fp32, flash-style attention: no s^2 term; no dropout masks), per
// layer, in floats, N = B*T tokens, r = stream rows (N, or N/t under sp),
// s = 2 statistics per row for LayerNorm (mean, rstd), 1 for RMSNorm:
//   outside (on the stream): block output C*r, norm1 out C*r + s*r,
//            attention + residual output ("mid") C*r, norm2 out C*r + s*r
//            = r * (4C + 2s)
//   inside: q, k, v, attention output N*(2*q_dim + 2*kv_dim)/t, the
//           log-sum-exp N*H/t, MLP pre-activation and activation
//           N*2*I/t (SwiGLU also keeps up: 3*I/t)
// plus, once per model, the embedding output C*r and the final norm
// (C + s)*r. So tp alone divides only "inside" by t and tp + sp divides
// everything by t: exactly the paper's 34/t structure, ratio sp / tp1 = 1/t.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "model/transformer.h"
#include "tp_env.h"

namespace parallm::tp_test {
namespace {

struct ActFloats {
  int64_t outside = 0, inside = 0;  // per layer
  int64_t once = 0;                 // embedding output + final norm
  int64_t total(int64_t L) const { return L * (outside + inside) + once; }
};

ActFloats expected_floats(const ModelConfig& m, int t, bool sp, int64_t N) {
  const int64_t C = m.hidden, s = m.uses_layernorm() ? 2 : 1;
  const int64_t r = sp && t > 1 ? N / t : N;
  const int64_t mlp = (m.uses_swiglu() ? 3 : 2) * m.intermediate / t;
  ActFloats a;
  a.outside = r * (4 * C + 2 * s);
  a.inside = N * ((2 * m.q_dim() + 2 * m.kv_dim() + m.n_heads) / t + mlp);
  a.once = C * r + (C + s) * r;
  return a;
}

// Peak activation bytes of one forward on the first t ranks (t = 1: this
// rank alone); -1 on ranks outside.
int64_t measure(const ModelConfig& m, int t, bool sp, int64_t B, int64_t T) {
  comm::Communicator* world = env().world;
  std::unique_ptr<comm::Communicator> sub;
  if (t > 1) {
    const bool in = world->rank() < t;
    sub = world->split(in ? 0 : -1, world->rank(), "tp_memory");
    if (!in) return -1;
  }
  Allocator alloc;
  TpGroup tp{.comm = sub.get(), .sequence_parallel = sp};
  Transformer model(m, alloc, tp);
  model.params().init_random(3);
  std::vector<int32_t> x(B * T);
  for (int64_t i = 0; i < B * T; ++i) x[i] = (i * 37) % 1000;
  alloc.reset_peaks();
  model.forward_loss(x.data(), x.data(), B, T);
  EXPECT_EQ(alloc.current(MemTag::Activation), 0) << "activations outlive the forward";
  return alloc.peak(MemTag::Activation);
}

TEST(TensorParallelActivationMemory, SequenceParallelDividesEverythingByTp) {
  const int world = env().world->size();
  if (world < 2) GTEST_SKIP() << "needs tp >= 2";
  const int64_t B = 2, T = 16, N = B * T, F = sizeof(float);
  for (int t : {2, 4}) {
    if (t > world) continue;
    for (const char* f : {"gpt2", "llama"}) {
      ModelConfig m = f == std::string("gpt2") ? tp_gpt2() : tp_llama();
      // per layer bytes, from 3 layers minus 1 layer, halved; and totals.
      double per_layer[3];  // tp 1, tp t, tp t + sp
      for (int k = 0; k < 3; ++k) {
        const int tk = k == 0 ? 1 : t;
        const bool sp = k == 2;
        int64_t peak[2];
        for (int li = 0; li < 2; ++li) {
          m.n_layers = li == 0 ? 1 : 3;
          peak[li] = measure(m, tk, sp, B, T);
          if (peak[li] < 0) continue;
          const int64_t want = F * expected_floats(m, tk, sp, N).total(m.n_layers);
          EXPECT_EQ(peak[li], want)
              << f << " tp " << tk << " sp " << sp << " layers " << m.n_layers;
        }
        per_layer[k] = (peak[1] - peak[0]) / 2.0;
      }
      if (env().world->rank() >= t) continue;
      const ActFloats a1 = expected_floats(m, 1, false, N);
      const double outside = double(a1.outside), inside = double(a1.inside);
      // The paper's prediction: sp divides the whole layer by t.
      EXPECT_DOUBLE_EQ(per_layer[2] / per_layer[0], 1.0 / t) << f << " tp " << t;
      // tp alone divides only attention and MLP: ours, exactly.
      const double tp_ratio = (outside + inside / t) / (outside + inside);
      EXPECT_DOUBLE_EQ(per_layer[1] / per_layer[0], tp_ratio) << f << " tp " << t;
      // Direction: tp1 > tp > tp + sp, and sp saves the outside part / t.
      EXPECT_GT(per_layer[0], per_layer[1]);
      EXPECT_GT(per_layer[1], per_layer[2]);
      EXPECT_DOUBLE_EQ(per_layer[1] - per_layer[2], F * outside * (1.0 - 1.0 / t));
      if (env().world->rank() == 0)
        std::printf(
            "[activation] %s tp %d: per layer %.0f / %.0f / %.0f bytes (tp1 / tp / tp+sp); "
            "tp ratio %.3f (Megatron fp16 %.3f), sp ratio %.3f (Megatron %.3f)\n",
            f, t, per_layer[0], per_layer[1], per_layer[2], tp_ratio, (10.0 + 24.0 / t) / 34.0,
            per_layer[2] / per_layer[0], 1.0 / t);
    }
  }
}

}  // namespace
}  // namespace parallm::tp_test
