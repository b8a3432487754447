// The run record a checkpoint keeps (train/config/run_config_json.h): every
// field of RunConfig, each set away from its default, survives the JSON
// text round trip; an older state without the record still gives the
// resume its model and recorded settings; a run file layers over a base.
#include "train/config/run_config_json.h"

#include <gtest/gtest.h>

#include <functional>

#include "base/error.h"
#include "common/run_config_file.h"
#include "io/hf_config.h"
#include "model/model_catalog.h"
#include "checkpoint/checkpoint_state.h"

namespace parallm {
namespace {

// Every field with a value different from RunConfig{}'s.
RunConfig every_field_set() {
  RunConfig rc;
  ModelConfig& m = rc.model;
  m = catalog_model("llama-tiny");
  m.vocab_size = 1000;
  m.hidden = 96;
  m.n_layers = 3;
  m.n_heads = 6;
  m.n_kv_heads = 2;
  m.head_dim = 24;
  m.intermediate = 200;
  m.max_positions = 512;
  m.norm_eps = 3e-6;
  m.rope_theta = 5e5;
  m.tie_embeddings = false;
  m.init_std = 0.015;
  m.attn_dropout = 0.125;
  m.hidden_dropout = 0.25;
  m.moe.num_experts = 4;
  m.moe.topk = 1;
  m.moe.layer_freq = 2;
  m.moe.order = RouterOrder::TopkSoftmax;
  m.moe.renormalize = true;
  m.moe.capacity_factor = 1.25;
  m.moe.drop_policy = DropPolicy::Probs;
  m.moe.aux_loss_coeff = 0.01;
  m.moe.z_loss_coeff = 0.001;
  TrainConfig& t = rc.train;
  t.data = {{"a_train.bin", "b_train.bin"}, {"c_val.bin"}, false};
  t.training = {7, 2, 16, 32, 99, 0.5, Recompute::Selective};
  OptimizerConfig& o = t.optimizer;
  o.kind = OptimizerKind::Muon;
  o.lr = 3e-4;
  o.beta1 = 0.8;
  o.beta2 = 0.99;
  o.eps = 1e-6;
  o.weight_decay = 0.05;
  o.momentum = 0.7;
  o.nesterov = true;
  o.muon_momentum = 0.9;
  o.muon_ns_steps = 4;
  o.muon_lr = 0.03;
  o.muon_weight_decay = 0.02;
  t.lr_schedule = {3, 0.2, WarmupStyle::Log, DecayStyle::Linear, 0.1, 50};
  ParallelismConfig& p = t.parallelism;
  p.dp = {4, 2, DpMode::ParameterServer, 8.5, false};
  p.tp = 2;
  p.sequence_parallel = true;
  p.pp = 3;
  p.ep = 2;
  p.schedule = "interleaved";
  p.virtual_stages = 2;
  p.pp_layers = "1,2,2,1";
  p.cp = 2;
  p.cp_comm = "a2a+ring";
  p.ulysses_degree = 2;
  t.checkpoint = {"hf_dir", "ck_in", true, "ck_out", 5, 3, 4, "hf_out"};
  PrecisionConfig& pr = t.precision;
  pr.matmul = Precision::FP16;
  pr.emulate_lowp_gemm = true;
  pr.loss_scale = {1024.0, 4.0, 4.0, 0.25, 50, 3};
  pr.skip_nonfinite = true;
  t.logging = {5, 20, 4, "m.jsonl", "tb", 12.5, "trace.json", "timeline.svg"};
  return rc;
}

// Names of the fields where a and b differ (every field is compared).
std::vector<std::string> differing(const RunConfig& a, const RunConfig& b) {
  std::vector<std::string> out;
  auto cmp = [&](const char* name, bool same) {
    if (!same) out.push_back(name);
  };
#define CMP(path) cmp(#path, a.path == b.path)
  CMP(model.arch);
  CMP(model.vocab_size);
  CMP(model.hidden);
  CMP(model.n_layers);
  CMP(model.n_heads);
  CMP(model.n_kv_heads);
  CMP(model.head_dim);
  CMP(model.intermediate);
  CMP(model.max_positions);
  CMP(model.norm_eps);
  CMP(model.rope_theta);
  CMP(model.tie_embeddings);
  CMP(model.init_std);
  CMP(model.attn_dropout);
  CMP(model.hidden_dropout);
  CMP(model.moe.num_experts);
  CMP(model.moe.topk);
  CMP(model.moe.layer_freq);
  CMP(model.moe.order);
  CMP(model.moe.renormalize);
  CMP(model.moe.capacity_factor);
  CMP(model.moe.drop_policy);
  CMP(model.moe.aux_loss_coeff);
  CMP(model.moe.z_loss_coeff);
  CMP(train.data.train);
  CMP(train.data.val);
  CMP(train.data.shuffle);
  CMP(train.training.steps);
  CMP(train.training.micro_batch_size);
  CMP(train.training.global_batch_size);
  CMP(train.training.seq_len);
  CMP(train.training.seed);
  CMP(train.training.clip_grad);
  CMP(train.training.recompute);
  CMP(train.optimizer.kind);
  CMP(train.optimizer.lr);
  CMP(train.optimizer.beta1);
  CMP(train.optimizer.beta2);
  CMP(train.optimizer.eps);
  CMP(train.optimizer.weight_decay);
  CMP(train.optimizer.momentum);
  CMP(train.optimizer.nesterov);
  CMP(train.optimizer.muon_momentum);
  CMP(train.optimizer.muon_ns_steps);
  CMP(train.optimizer.muon_lr);
  CMP(train.optimizer.muon_weight_decay);
  CMP(train.lr_schedule.warmup);
  CMP(train.lr_schedule.min_lr_ratio);
  CMP(train.lr_schedule.warmup_style);
  CMP(train.lr_schedule.decay_style);
  CMP(train.lr_schedule.warmup_start_ratio);
  CMP(train.lr_schedule.decay_steps);
  CMP(train.parallelism.dp.dp);
  CMP(train.parallelism.dp.zero);
  CMP(train.parallelism.dp.mode);
  CMP(train.parallelism.dp.bucket_mb);
  CMP(train.parallelism.dp.overlap);
  CMP(train.parallelism.tp);
  CMP(train.parallelism.sequence_parallel);
  CMP(train.parallelism.pp);
  CMP(train.parallelism.ep);
  CMP(train.parallelism.schedule);
  CMP(train.parallelism.virtual_stages);
  CMP(train.parallelism.pp_layers);
  CMP(train.parallelism.cp);
  CMP(train.parallelism.cp_comm);
  CMP(train.parallelism.ulysses_degree);
  CMP(train.checkpoint.init_from);
  CMP(train.checkpoint.load_dir);
  CMP(train.checkpoint.resume);
  CMP(train.checkpoint.save_dir);
  CMP(train.checkpoint.save_interval);
  CMP(train.checkpoint.keep);
  CMP(train.checkpoint.exit_interval);
  CMP(train.checkpoint.save_hf_dir);
  CMP(train.precision.matmul);
  CMP(train.precision.emulate_lowp_gemm);
  CMP(train.precision.loss_scale.initial_scale);
  CMP(train.precision.loss_scale.min_scale);
  CMP(train.precision.loss_scale.growth_factor);
  CMP(train.precision.loss_scale.backoff_factor);
  CMP(train.precision.loss_scale.window);
  CMP(train.precision.loss_scale.hysteresis);
  CMP(train.precision.skip_nonfinite);
  CMP(train.logging.log_interval);
  CMP(train.logging.eval_interval);
  CMP(train.logging.eval_batches);
  CMP(train.logging.metrics_path);
  CMP(train.logging.tensorboard_dir);
  CMP(train.logging.peak_tflops);
  CMP(train.logging.trace_path);
  CMP(train.logging.timeline_path);
#undef CMP
  return out;
}
constexpr size_t kFieldsCompared = 92;

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += x + " ";
  return s;
}

TEST(RunConfigJson, EveryFieldSurvivesTheTextRoundTrip) {
  const RunConfig rc = every_field_set();
  // Each compared field is set away from its default, so a field the writer
  // or the reader dropped would show.
  ASSERT_EQ(differing(RunConfig{}, rc).size(), kFieldsCompared)
      << joined(differing(RunConfig{}, rc));
  const std::string text = run_config_json(rc).dump();
  const RunConfig back = run_config_from_json(nlohmann::json::parse(text), "test");
  EXPECT_TRUE(differing(back, rc).empty()) << "lost: " << joined(differing(back, rc));
}

TEST(RunConfigJson, SurvivesInsideTheTrainingState) {
  RunConfig rc = every_field_set();
  rc.model = catalog_model("gpt2-tiny");
  rc.model.attn_dropout = 0.1;
  rc.train.parallelism = {};
  TrainingState s = training_state_of(rc.model, rc.train, {}, 3, 3);
  ASSERT_TRUE(s.run.has_value());
  const auto j = nlohmann::json::parse(training_state_json(s).dump());
  ASSERT_TRUE(j.contains("run"));
  const TrainingState back = training_state_from_json(j, "train_state.json");
  ASSERT_TRUE(back.run.has_value());
  EXPECT_TRUE(differing(*back.run, rc).empty()) << "lost: " << joined(differing(*back.run, rc));
  // The resume's base: the record, without where the weights first came from.
  const RunConfig base = resumable_run(back);
  EXPECT_EQ(base.train.checkpoint.init_from, "");
  EXPECT_EQ(base.train.checkpoint.load_dir, "");
  EXPECT_EQ(differing(base, rc).size(), 2u) << joined(differing(base, rc));
}

TEST(RunConfigJson, AnOlderStateWithoutTheRecordGivesItsModelAndSettings) {
  RunConfig rc;
  rc.model = catalog_model("llama-tiny");
  rc.train.training = {12, 1, 6, 64, 7, 1.0, Recompute::None};
  rc.train.optimizer.kind = OptimizerKind::Adam;
  rc.train.optimizer.lr = 2e-3;
  rc.train.lr_schedule.warmup = 4;
  rc.train.lr_schedule.min_lr_ratio = 0.3;
  const CheckpointLayout layout{4, 2, 1, 1, 1, "allreduce", false, 2, 2};
  nlohmann::json j = training_state_json(training_state_of(rc.model, rc.train, layout, 6, 6));
  j.erase("run");
  EXPECT_EQ(layout_name(training_state_from_json(j, "x").layout),
            "dp 2 x tp 1 x pp 1 x cp 2 (ep 2) (ZeRO-1)");
  const TrainingState old = training_state_from_json(j, "old train_state.json");
  EXPECT_FALSE(old.run.has_value());
  const RunConfig base = resumable_run(old);
  EXPECT_EQ(hf_config_json(base.model, "float32"), hf_config_json(rc.model, "float32"));
  EXPECT_EQ(base.train.training.steps, 12);
  EXPECT_EQ(base.train.training.global_batch_size, 6);
  EXPECT_EQ(base.train.training.micro_batch_size, 3) << "the default 4 does not divide 6 / dp 2";
  EXPECT_EQ(base.train.training.seq_len, 64);
  EXPECT_EQ(base.train.training.seed, 7u);
  EXPECT_EQ(base.train.optimizer.kind, OptimizerKind::Adam);
  EXPECT_EQ(base.train.optimizer.lr, 2e-3);
  EXPECT_EQ(base.train.lr_schedule.warmup, 4);
  EXPECT_EQ(base.train.lr_schedule.min_lr_ratio, 0.3);
  EXPECT_EQ(base.train.parallelism.dp.dp, 2);
  EXPECT_EQ(base.train.parallelism.dp.zero, 1);
  EXPECT_EQ(base.train.parallelism.cp, 2);
  EXPECT_EQ(base.train.parallelism.ep, 2);
  // A state from before cp and ep were recorded reads as 1.
  j["layout"].erase("cp");
  j["layout"].erase("ep");
  const TrainingState older = training_state_from_json(j, "older train_state.json");
  EXPECT_EQ(older.layout.cp, 1);
  EXPECT_EQ(older.layout.ep, 1);
}

TEST(RunConfigJson, MistypedKeysAreNamed) {
  nlohmann::json j = run_config_json(every_field_set());
  j["training"]["steps"] = "many";
  try {
    run_config_from_json(j, "ck/train_state.json");
    FAIL() << "a mistyped key was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("training.steps"), std::string::npos) << e.what();
  }
}

TEST(RunConfigJson, ARunFileLayersOverABase) {
  RunConfig base = every_field_set();
  base.model = catalog_model("llama-tiny");
  base.model.head_dim = 16;  // not hidden / heads: a missing [model] must keep it
  const RunConfig rc = load_run_config(
      testing::write_toml("[training]\nsteps = 9\n[logging]\nmetrics = \"/tmp/x.jsonl\"\n"), base);
  EXPECT_EQ(rc.train.training.steps, 9);
  EXPECT_EQ(rc.train.logging.metrics_path, "/tmp/x.jsonl");
  std::vector<std::string> d = differing(rc, base);
  EXPECT_EQ(d.size(), 2u) << joined(d);
}

}  // namespace
}  // namespace parallm
