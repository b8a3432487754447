// Hugging Face round trip from a tensor-parallel run: a tp 2 job saves a
// checkpoint and, at its end, an HF directory (--save-hf, gathered in
// memory); `export` turns the checkpoint into HF directories (one file and
// sharded). One process loading the export computes the same logits as the
// tp 2 model loading the checkpoint, a tp 2 model loading the export
// (--init-from, each rank reading its slices) holds exactly the
// checkpoint's values, and both HF writers produce identical tensors.
// From a tp 2 x pp 2 run likewise: the export and --save-hf (gathered over
// stages) give the one-process model the checkpoint's logits, each stage
// loading the export holds exactly the checkpoint's values (the last
// stage's copy of the tied table too), a job started from the export under
// tp 2 x pp 2 follows the one-process one, and every byte is saved once.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <numeric>

#include "ckpt_env.h"
#include "io/checkpoint/checkpoint_dir.h"
#include "io/hf_model.h"
#include "io/safetensors.h"
#include "model/transformer.h"
#include "checkpoint/checkpoint_export.h"
#include "checkpoint/checkpoint_load.h"
#include "train/pipeline_step.h"

namespace fs = std::filesystem;

namespace parallm::ckpt_test {
namespace {

std::vector<int32_t> tokens(int64_t n) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    t[static_cast<size_t>(i)] = static_cast<int32_t>((i * 37 + 5) % 1001);
  return t;
}

TEST(HfRoundTrip, FromTp2) {
  comm::Communicator* world = env().world;
  const Layout l{.tp = 2};
  const std::string dir = env().scratch + "/hf_tp2";
  TrainJobOptions o = job(l, dir, "");
  o.run.train.training.steps = 4;
  o.run.train.checkpoint.save_hf_dir = dir + "_direct";
  run_job(o, l);
  if (world->rank() == 0) {
    export_checkpoint_to_hf(dir, dir + "_export", DType::F32);
    export_checkpoint_to_hf(dir, dir + "_sharded", DType::F32, 40000);
  }
  world->barrier();
  const ModelConfig cfg = o.run.model;
  const int64_t B = 2, T = 16;
  const auto in = tokens(B * T);

  auto sub = world->split(world->rank() < 2 ? 0 : -1, world->rank(), "tp");
  std::vector<float> tp_logits;
  if (sub) {
    Allocator alloc;
    TpGroup tp{.comm = sub.get()};
    Transformer from_ck(cfg, alloc, tp), from_hf(cfg, alloc, tp);
    from_ck.params().init_random(1);
    from_hf.params().init_random(1);  // the same padding rows in both
    OpenedCheckpoint ck = open_checkpoint(dir, sub.get());
    load_checkpoint_values(ck, from_ck.params(), cfg.vocab_size);
    load_hf_weights(dir + "_export", from_hf);
    Tensor lg = from_ck.logits(in.data(), B, T);
    tp_logits.assign(lg.data<float>(), lg.data<float>() + lg.numel());
    // Every value but the tp vocabulary padding rows (not part of the HF model).
    const ParameterSet& pa = from_ck.params();
    const ParameterSet& pb = from_hf.params();
    for (int i = 0; i < pa.size(); ++i) {
      const ParamSpec& s = pa.spec(i);
      int64_t n = pa.numel(i);
      if (s.global_shape[0] > cfg.vocab_size) {  // a padded table: rows past the vocabulary
        const int64_t valid = std::clamp<int64_t>(cfg.vocab_size - s.shard_begin, 0, s.shape[0]);
        n = valid * s.shape[1];
      }
      const float* a = pa.value({i});
      const float* b = pb.value({i});
      EXPECT_EQ(std::vector<float>(a, a + n), std::vector<float>(b, b + n))
          << "tp rank " << sub->rank() << ": --init-from holds other values than the checkpoint in "
          << s.name;
    }
  }
  world->barrier();
  if (world->rank() != 0) return;

  Allocator alloc;
  for (const char* variant : {"_export", "_sharded", "_direct"}) {
    Transformer one(cfg, alloc);
    load_hf_weights(dir + variant, one);
    Tensor lg = one.logits(in.data(), B, T);
    ASSERT_EQ(static_cast<size_t>(lg.numel()), tp_logits.size());
    double worst = 0;
    for (size_t k = 0; k < tp_logits.size(); ++k)
      worst = std::max(worst, static_cast<double>(std::abs(lg.data<float>()[k] - tp_logits[k])));
    EXPECT_LT(worst, 1e-5) << variant << ": one-process logits differ from tp 2";
  }
  EXPECT_TRUE(fs::exists(dir + "_sharded/model.safetensors.index.json"));
  // The in-memory gather (--save-hf) and the export write the same tensors.
  auto a = SafetensorsFile::open(dir + "_direct/model.safetensors");
  auto b = SafetensorsFile::open(dir + "_export/model.safetensors");
  ASSERT_EQ(a.entries().size(), b.entries().size());
  for (const auto& e : a.entries()) {
    const TensorEntry& f = b.at(e.name);
    EXPECT_EQ(e.shape, f.shape) << e.name;
    EXPECT_EQ(a.read_as_f32(e), b.read_as_f32(f)) << e.name;
  }
}

// Values of parameter i of a, b equal, but the tp vocabulary padding rows.
void expect_same_values(const ParameterSet& pa, const ParameterSet& pb, int64_t vocab,
                        const std::string& who) {
  ASSERT_EQ(pa.size(), pb.size()) << who;
  for (int i = 0; i < pa.size(); ++i) {
    const ParamSpec& s = pa.spec(i);
    int64_t n = pa.numel(i);
    if (s.global_shape[0] > vocab) {
      const int64_t valid = std::clamp<int64_t>(vocab - s.shard_begin, 0, s.shape[0]);
      n = valid * s.shape[1];
    }
    const float* a = pa.value({i});
    const float* b = pb.value({i});
    EXPECT_EQ(std::vector<float>(a, a + n), std::vector<float>(b, b + n))
        << who << ": --init-from holds other values than the checkpoint in " << s.name;
  }
}

TEST(HfRoundTrip, FromTp2Pp2) {
  comm::Communicator* world = env().world;
  const Layout l{.tp = 2, .pp = 2};
  const std::string dir = env().scratch + "/hf_tp2_pp2";
  TrainJobOptions o = job(l, dir, "");
  o.run.train.training.steps = 4;
  o.run.train.checkpoint.save_hf_dir = dir + "_direct";
  run_job(o, l);
  if (world->rank() == 0) export_checkpoint_to_hf(dir, dir + "_export", DType::F32);
  world->barrier();
  const ModelConfig cfg = o.run.model;

  {  // Each rank (tp rank = rank % 2, stage = rank / 2) loads the export.
    const int stage = world->rank() / 2;
    auto tp_comm = world->split(stage, world->rank() % 2, "tp");
    Allocator alloc;
    TpGroup tp{.comm = tp_comm.get()};
    const ModelStage ms = pipeline_stage(o.run.train, cfg, stage);
    Transformer from_ck(cfg, alloc, tp, ms), from_hf(cfg, alloc, tp, ms);
    from_ck.params().init_random(1);
    from_hf.params().init_random(1);
    OpenedCheckpoint ck = open_checkpoint(dir, world);
    check_checkpoint_covers_model(ck, from_ck.params(), cfg);
    load_checkpoint_values(ck, from_ck.params(), cfg.vocab_size);
    load_hf_weights(dir + "_export", from_hf);
    const int table = from_hf.params().find("embed.weight");
    EXPECT_GE(table, 0) << "the first and last stage hold the tied table";
    if (table >= 0) {
      EXPECT_EQ(from_hf.params().spec(table).pipeline_copy, stage == 1);
    }
    expect_same_values(from_ck.params(), from_hf.params(), cfg.vocab_size,
                       fmt::format("stage {} tp rank {}", stage, tp.rank()));
  }
  // A training job started --init-from the export under tp 2 x pp 2 follows
  // the one-process job started from it.
  auto from_export = [&](const Layout& at, const std::string& metrics) {
    TrainJobOptions j = job(at, "", metrics);
    j.run.train.training.steps = 3;
    j.run.train.checkpoint.init_from = dir + "_export";
    run_job(j, at);
  };
  from_export(Layout{}, dir + "_init_one.jsonl");
  from_export(l, dir + "_init_pp.jsonl");
  world->barrier();
  if (world->rank() != 0) return;

  auto one = read_losses(dir + "_init_one.jsonl"), pp = read_losses(dir + "_init_pp.jsonl");
  ASSERT_EQ(one.size(), 3u);
  ASSERT_EQ(pp.size(), 3u);
  for (size_t i = 0; i < 3; ++i)
    EXPECT_NEAR(pp[i].second, one[i].second, 1e-5 * std::abs(one[i].second)) << "step " << i;

  // Every byte of the model is saved once: the saved param pieces add up
  // to the elements of the (tp-padded) tensors, the tied table once.
  auto whole = consolidate(dir, "param");
  int64_t want = 0, saved = 0;
  for (const auto& [name, v] : whole) want += static_cast<int64_t>(v.size());
  for (const auto& f : fs::directory_iterator(dir + "/" + step_dir_name(4))) {
    if (f.path().extension() != ".safetensors") continue;
    auto st = SafetensorsFile::open(f.path().string());
    for (const auto& e : st.entries())
      if (e.name.rfind("param/", 0) == 0)
        saved +=
            std::accumulate(e.shape.begin(), e.shape.end(), int64_t{1}, std::multiplies<int64_t>());
  }
  EXPECT_EQ(saved, want) << "elements saved over all ranks vs the model's";

  const int64_t B = 2, T = 16;
  const auto in = tokens(B * T);
  Allocator alloc;
  Transformer from_ck(cfg, alloc);
  from_ck.params().init_random(1);
  OpenedCheckpoint ck = open_checkpoint(dir, nullptr);
  check_checkpoint_covers_model(ck, from_ck.params(), cfg);
  load_checkpoint_values(ck, from_ck.params(), cfg.vocab_size);
  Tensor ref = from_ck.logits(in.data(), B, T);
  for (const char* variant : {"_export", "_direct"}) {
    Transformer one(cfg, alloc);
    load_hf_weights(dir + variant, one);
    Tensor lg = one.logits(in.data(), B, T);
    ASSERT_EQ(lg.numel(), ref.numel());
    EXPECT_EQ(std::vector<float>(lg.data<float>(), lg.data<float>() + lg.numel()),
              std::vector<float>(ref.data<float>(), ref.data<float>() + ref.numel()))
        << variant << ": one-process logits differ from the tp 2 x pp 2 checkpoint's";
  }
  auto a = SafetensorsFile::open(dir + "_direct/model.safetensors");
  auto b = SafetensorsFile::open(dir + "_export/model.safetensors");
  ASSERT_EQ(a.entries().size(), b.entries().size());
  for (const auto& e : a.entries()) {
    const TensorEntry& f = b.at(e.name);
    EXPECT_EQ(a.read_as_f32(e), b.read_as_f32(f)) << e.name;
  }
}

}  // namespace
}  // namespace parallm::ckpt_test
