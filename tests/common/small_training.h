// Shared pieces of the precision and recompute tests: a small repetitive
// corpus as a token shard, a short training run, and one-process training
// that returns every step's stats and the final parameters.
#pragma once
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "common/test_models.h"
#include "data/byte_tokenizer.h"
#include "data/token_shard.h"
#include "train/trainer.h"

namespace parallm::precision_test {

inline std::string make_shard(const std::string& name) {
  std::string text;
  for (int i = 0; i < 40; ++i)
    text += "the quick brown fox jumps over the lazy dog. a stitch in time saves nine. ";
  auto tokens = ByteTokenizer::encode(text);
  auto p = std::filesystem::temp_directory_path() / (name + std::to_string(getpid()) + ".bin");
  write_token_shard(p.string(), tokens);
  return p.string();
}

inline TrainConfig small_run(const std::string& shard, int64_t steps) {
  TrainConfig t;
  t.data.train = {shard};
  t.training.seq_len = 32;
  t.training.micro_batch_size = 4;
  t.training.global_batch_size = 8;  // two micro-batches: accumulation is exercised
  t.training.steps = steps;
  t.optimizer.lr = 3e-3;
  t.lr_schedule.warmup = 5;
  return t;
}

inline ModelConfig family(const std::string& name, bool dropout = false) {
  ModelConfig c = name == "gpt2" ? testing::tiny_gpt2() : testing::tiny_llama();
  c.vocab_size = 257;
  if (dropout) c.attn_dropout = c.hidden_dropout = 0.1;
  return c;
}

struct RunResult {
  std::vector<StepStats> steps;
  std::vector<float> params;    // flat values at the end
  int64_t activation_peak = 0;  // MemTag::Activation peak of the last step
  int64_t updates = 0;
};

// Trains `c` under `t`; before_run may touch the model and trainer first.
inline RunResult train(const ModelConfig& c, const TrainConfig& t,
                       const std::function<void(Transformer&, Trainer&)>& before_run = {}) {
  Allocator a;
  Transformer m(c, a);
  m.params().init_random(1);
  Trainer tr(m, t, a, 0.0);
  if (before_run) before_run(m, tr);
  RunResult r;
  tr.run([&](const StepStats& s) { r.steps.push_back(s); });
  const Tensor& v = m.params().flat_values();
  r.params.assign(v.data<float>(), v.data<float>() + v.numel());
  r.activation_peak = a.stats().peak[static_cast<size_t>(MemTag::Activation)];
  r.updates = tr.updates();
  return r;
}

}  // namespace parallm::precision_test
