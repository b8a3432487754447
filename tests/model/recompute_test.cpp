// Activation recomputation changes memory, never results: under selective
// and full recomputation every step's loss and every parameter after
// training are bit-identical to no recomputation (GPT-2 and LLaMA, dropout
// on, gradient accumulation, fp32 and bf16), while the allocator's
// activation peak falls as parallm_activations predicts.
#include <gtest/gtest.h>

#include <cstring>

#include "common/small_training.h"
#include "plan/memory_model.h"
#include "plan/parallm_activations.h"

namespace parallm::precision_test {
namespace {

double predicted_activations(const ModelConfig& c, const TrainConfig& t) {
  MemoryQuery q;
  q.model = c;
  q.seq_len = t.training.seq_len;
  q.micro_batch = t.training.micro_batch_size;
  q.precision = t.precision.matmul;
  q.recompute = t.training.recompute;
  q.activation_model = ActivationModel::Parallm;
  const ParallmActivations a = parallm_activations(q);
  return a.per_layer * static_cast<double>(c.n_layers) + a.outside + a.working;
}

void expect_bit_identical(const std::string& name, Precision precision) {
  const std::string shard = make_shard("recompute_" + name);
  const ModelConfig c = family(name, /*dropout=*/true);
  RunResult runs[3];
  const Recompute modes[3] = {Recompute::None, Recompute::Selective, Recompute::Full};
  for (int k = 0; k < 3; ++k) {
    TrainConfig t = small_run(shard, 4);
    t.precision.matmul = precision;
    t.training.recompute = modes[k];
    runs[k] = train(c, t);
    EXPECT_NEAR(static_cast<double>(runs[k].activation_peak), predicted_activations(c, t),
                0.01 * predicted_activations(c, t))
        << name << " recompute " << k << ": allocator vs parallm_activations";
  }
  for (int k = 1; k < 3; ++k) {
    const std::string what = name + " recompute " + (k == 1 ? "selective" : "full");
    ASSERT_EQ(runs[k].steps.size(), runs[0].steps.size());
    for (size_t s = 0; s < runs[0].steps.size(); ++s) {
      EXPECT_EQ(runs[k].steps[s].loss, runs[0].steps[s].loss) << what << " step " << s;
      EXPECT_EQ(runs[k].steps[s].grad_norm, runs[0].steps[s].grad_norm) << what << " step " << s;
    }
    ASSERT_EQ(runs[k].params.size(), runs[0].params.size());
    EXPECT_EQ(std::memcmp(runs[k].params.data(), runs[0].params.data(),
                          runs[0].params.size() * sizeof(float)),
              0)
        << what << ": parameters differ";
  }
  EXPECT_LT(runs[1].activation_peak, runs[0].activation_peak) << name;
  EXPECT_LT(runs[2].activation_peak, runs[1].activation_peak) << name;
  std::filesystem::remove(shard);
}

TEST(Recompute, Gpt2BitIdentical) { expect_bit_identical("gpt2", Precision::FP32); }
TEST(Recompute, LlamaBitIdentical) { expect_bit_identical("llama", Precision::FP32); }
TEST(Recompute, Bf16BitIdentical) { expect_bit_identical("gpt2", Precision::BF16); }

}  // namespace
}  // namespace parallm::precision_test
