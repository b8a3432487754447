#include "train/trainer.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "common/test_models.h"
#include "data/byte_tokenizer.h"
#include "data/token_shard.h"

namespace fs = std::filesystem;

namespace parallm {
namespace {

std::string make_shard(const std::string& name) {
  std::string text;
  for (int i = 0; i < 40; ++i)
    text += "the quick brown fox jumps over the lazy dog. a stitch in time saves nine. ";
  auto tokens = ByteTokenizer::encode(text);
  fs::path p = fs::temp_directory_path() / (name + std::to_string(getpid()) + ".bin");
  write_token_shard(p.string(), tokens);
  return p.string();
}

TrainConfig small_run(const std::string& shard) {
  TrainConfig t;
  t.data.train = {shard};
  t.training.seq_len = 32;
  t.training.micro_batch_size = 4;
  t.training.global_batch_size = 4;
  t.training.steps = 40;
  t.optimizer.lr = 3e-3;
  t.lr_schedule.warmup = 5;
  return t;
}

TEST(Trainer, LossFallsOnARepetitiveCorpus) {
  std::string shard = make_shard("trainer_fall");
  ModelConfig c = testing::tiny_gpt2();
  c.vocab_size = 257;
  Allocator a;
  Transformer m(c, a);
  m.params().init_random(1);
  Trainer tr(m, small_run(shard), a, 0.0);
  double first = 0, last = 0;
  tr.run([&](const StepStats& s) {
    if (s.step == 0) first = s.loss;
    last = s.loss;
  });
  EXPECT_NEAR(first, std::log(257.0), 0.3);
  EXPECT_LT(last, 0.5 * first);
  fs::remove(shard);
}

// Gradient accumulation: 1 x 4 sequences and 2 x 2 sequences per step follow
// the same trajectory (up to fp32 summation order).
TEST(Trainer, GradientAccumulationMatchesOneLargeBatch) {
  std::string shard = make_shard("trainer_accum");
  ModelConfig c = testing::tiny_llama();
  c.vocab_size = 257;
  std::vector<double> losses[2];
  for (int k = 0; k < 2; ++k) {
    TrainConfig t = small_run(shard);
    t.training.steps = 8;
    t.training.micro_batch_size = k == 0 ? 4 : 2;
    Allocator a;
    Transformer m(c, a);
    m.params().init_random(1);
    Trainer tr(m, t, a, 0.0);
    tr.run([&](const StepStats& s) { losses[k].push_back(s.loss); });
  }
  for (size_t i = 0; i < losses[0].size(); ++i)
    EXPECT_NEAR(losses[1][i], losses[0][i], 1e-5 * losses[0][i]) << "step " << i;
  fs::remove(shard);
}

TEST(Trainer, RefusesBadRunsBeforeAllocating) {
  std::string shard = make_shard("trainer_bad");
  ModelConfig c = testing::tiny_gpt2();  // vocabulary 1000 > 257: fine
  TrainConfig t = small_run(shard);
  t.training.global_batch_size = 6;
  try {
    t.validate(c);
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "global batch size (6) is not divisible by micro batch size (4)");
  }
  t = small_run(shard);
  t.training.seq_len = 100;  // > max_positions 64
  EXPECT_THROW(t.validate(c), Error);
  c.vocab_size = 100;  // the data holds byte values up to 'z' = 122
  Allocator a;
  Transformer m(c, a);
  try {
    Trainer tr(m, small_run(shard), a, 0.0);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("100"), std::string::npos) << e.what();
  }
  fs::remove(shard);
}

}  // namespace
}  // namespace parallm
