// Many LoRA adapters in one serving batch (infer/served_adapter.h,
// nn/row_lora.h): eight PEFT adapters (different ranks, targets, one
// rsLoRA) plus base rows in one ragged forward through the paged cache,
// prefill then decode; each row's logits equal (1e-5 of the largest logit,
// docs/testing.md "Many adapters in one batch") that sequence served alone
// with its adapter, the training LoRA model's own forward and the merged
// weights. Malformed adapter directories fail naming the file and key.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "base/error.h"
#include "base/rng.h"
#include "common/test_models.h"
#include "infer/served_adapter.h"
#include "io/peft_adapter.h"
#include "model/kv_cache/paged_kv_cache.h"
#include "model/lora/lora_merge.h"

namespace fs = std::filesystem;

namespace parallm {
namespace {

constexpr uint64_t kBaseSeed = 5;
constexpr int kAdapters = 8;

ModelConfig base_config() {
  ModelConfig c = testing::tiny_llama();
  c.init_std = 0.2;  // logits far apart
  return c;
}

// Adapter a: its own rank, targets and values.
LoraConfig adapter_config(int a) {
  static const std::vector<std::vector<std::string>> targets = {
      {"all-linear"}, {"q", "v"}, {"o", "down"}, {"gate", "up"}, {"k"}, {"q", "k", "v", "o"},
      {"all-linear"}, {"down"}};
  LoraConfig l;
  l.rank = 2 + a % 4 * 2;
  l.alpha = 4.0 + a;
  l.targets = targets[static_cast<size_t>(a)];
  l.rslora = a == 6;
  return l;
}

std::vector<int32_t> tokens(int64_t n, int64_t vocab, uint64_t seed) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  const uint64_t key = stream_key(seed, "tokens");
  for (int64_t i = 0; i < n; ++i) t[i] = static_cast<int32_t>(uniform_at(key, i) * vocab);
  return t;
}

// The training model of adapter a, with trained-looking (non-zero) B.
std::unique_ptr<Transformer> lora_model(int a, Allocator& alloc) {
  ModelConfig c = base_config();
  c.lora = adapter_config(a);
  auto m = std::make_unique<Transformer>(c, alloc);
  m->base_params().init_random(kBaseSeed);
  m->params().init_random(100 + a);
  const ParameterSet& ps = m->params();
  for (int i = 0; i < ps.size(); ++i) {
    if (ps.spec(i).name.back() != 'B') continue;
    float* v = ps.value(ParamRef{i});
    const uint64_t key = stream_key(200 + a, ps.spec(i).name);
    for (int64_t j = 0; j < ps.numel(i); ++j) v[j] = static_cast<float>(0.3 * normal_at(key, j));
  }
  return m;
}

double max_abs(const float* x, int64_t n) {
  double m = 0;
  for (int64_t i = 0; i < n; ++i) m = std::max(m, std::abs(static_cast<double>(x[i])));
  return m;
}
double max_diff(const float* x, const float* y, int64_t n) {
  double m = 0;
  for (int64_t i = 0; i < n; ++i) m = std::max(m, std::abs(static_cast<double>(x[i]) - y[i]));
  return m;
}

std::vector<int32_t> blocks(int64_t first, int64_t n) {
  std::vector<int32_t> b(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) b[i] = static_cast<int32_t>(first + i);
  return b;
}

class ServedAdapters : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("served_adapters_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
             "_" + std::to_string(reinterpret_cast<uintptr_t>(this)));
    fs::create_directories(root_);
    for (int a = 0; a < kAdapters; ++a) {
      Allocator alloc;
      save_peft_adapter(dir(a), *lora_model(a, alloc), "tiny");
    }
  }
  void TearDown() override { fs::remove_all(root_); }
  std::string dir(int a) const { return (root_ / ("adapter" + std::to_string(a))).string(); }
  fs::path root_;
};

TEST_F(ServedAdapters, EightInOneBatchEqualEachAlone) {
  Allocator alloc;
  const ModelConfig cfg = base_config();
  Transformer base(cfg, alloc);
  base.base_params().init_random(kBaseSeed);
  std::vector<std::shared_ptr<const ServedAdapter>> ad;
  for (int a = 0; a < kAdapters; ++a) ad.push_back(ServedAdapter::load(dir(a), base, 0));
  // Spans: adapter 3 twice and apart (its rows are gathered), base rows
  // between adapters, adapters out of order.
  const std::vector<int> use = {5, 3, -1, 0, 7, 1, 3, 6, -1, 2, 4};
  const int64_t S = static_cast<int64_t>(use.size()), V = cfg.vocab_size, bs = 4, per = 4;
  std::vector<std::vector<int32_t>> prompts;
  for (int64_t s = 0; s < S; ++s) prompts.push_back(tokens(3 + s % 5, V, 40 + s));
  const std::vector<int32_t> next = tokens(S, V, 99);  // the decode step's tokens

  // All at once: prefill, then one decode token each.
  PagedKvCache cache(cfg, base.tp(), S * per, bs, alloc);
  std::vector<const LoraFactorTable*> per_span;
  std::vector<int64_t> counts, decode_counts(static_cast<size_t>(S), 1);
  std::vector<int32_t> feed;
  std::vector<PagedSpan> spans, decode;
  for (int64_t s = 0; s < S; ++s) {
    const int a = use[s];
    per_span.push_back(a < 0 ? nullptr : &ad[a]->table());
    const int64_t n = static_cast<int64_t>(prompts[s].size());
    counts.push_back(n);
    feed.insert(feed.end(), prompts[s].begin(), prompts[s].end());
    spans.push_back({0, n, blocks(s * per, per)});
    decode.push_back({n, 1, blocks(s * per, per)});
  }
  const RowLoras rows = group_rows_by_adapter(per_span, counts);
  ASSERT_EQ(rows.groups.size(), 8u);  // one group per adapter, base rows in none
  const Tensor prefill = base.forward_cached(feed.data(), spans, cache, &rows);
  const RowLoras drows = group_rows_by_adapter(per_span, decode_counts);
  const Tensor step = base.forward_cached(next.data(), decode, cache, &drows);

  for (int64_t s = 0; s < S; ++s) {
    const int a = use[s];
    const int64_t n = static_cast<int64_t>(prompts[s].size());
    // Served alone: the same base model and adapter, one span.
    PagedKvCache one(cfg, base.tp(), per, bs, alloc);
    const LoraFactorTable* t = a < 0 ? nullptr : &ad[a]->table();
    const RowLoras alone = group_rows_by_adapter({&t, 1}, std::vector<int64_t>{n});
    const Tensor p1 = base.forward_cached(prompts[s].data(), {{0, n, blocks(0, per)}}, one, &alone);
    const RowLoras alone1 = group_rows_by_adapter({&t, 1}, std::vector<int64_t>{1});
    const Tensor d1 = base.forward_cached(&next[s], {{n, 1, blocks(0, per)}}, one, &alone1);
    const float* pb = prefill.data<float>() + s * V;
    const float* db = step.data<float>() + s * V;
    const double scale = max_abs(p1.data<float>(), V);
    EXPECT_LE(max_diff(pb, p1.data<float>(), V), 1e-5 * scale) << "span " << s << " prefill";
    EXPECT_LE(max_diff(db, d1.data<float>(), V), 1e-5 * scale) << "span " << s << " decode";
    if (a < 0) continue;
    // The training LoRA model (its own adapter code path) and the merged weights.
    Allocator a1, a2;
    std::unique_ptr<Transformer> m = lora_model(a, a1);
    Transformer merged(cfg, a2);
    merged.params().init_random(kBaseSeed);
    merge_lora(m->params(), merged.params(), m->config().lora.scale());
    for (Transformer* ref : {m.get(), &merged}) {
      PagedKvCache rc(cfg, ref->tp(), per, bs, ref == &merged ? a2 : a1);
      const Tensor rp = ref->forward_cached(prompts[s].data(), {{0, n, blocks(0, per)}}, rc);
      const Tensor rd = ref->forward_cached(&next[s], {{n, 1, blocks(0, per)}}, rc);
      const char* what = ref == &merged ? "merged" : "lora model";
      EXPECT_LE(max_diff(pb, rp.data<float>(), V), 1e-5 * scale) << "span " << s << " " << what;
      EXPECT_LE(max_diff(db, rd.data<float>(), V), 1e-5 * scale) << "span " << s << " " << what;
    }
    // The adapter matters: its row differs from the base model's.
    PagedKvCache bc(cfg, base.tp(), per, bs, alloc);
    const Tensor bp = base.forward_cached(prompts[s].data(), {{0, n, blocks(0, per)}}, bc);
    EXPECT_GT(max_diff(pb, bp.data<float>(), V), 1e-3 * scale) << "span " << s;
  }
}

TEST_F(ServedAdapters, GroupsMergeAdjacentRowsAndSkipTheBase) {
  LoraFactorTable x, y;
  const std::vector<const LoraFactorTable*> per = {&x, &x, nullptr, &y, &x};
  const RowLoras r = group_rows_by_adapter(per, std::vector<int64_t>{2, 3, 1, 1, 4});
  ASSERT_EQ(r.groups.size(), 2u);
  EXPECT_EQ(r.groups[0].table, &x);
  ASSERT_EQ(r.groups[0].ranges.size(), 2u);  // rows 0-4 merged, then 7-10
  EXPECT_EQ(r.groups[0].ranges[0].begin, 0);
  EXPECT_EQ(r.groups[0].ranges[0].count, 5);
  EXPECT_EQ(r.groups[0].ranges[1].begin, 7);
  EXPECT_EQ(r.groups[0].rows, 9);
  EXPECT_EQ(r.groups[1].ranges[0].begin, 6);
}

void expect_load_error(const std::string& dir, Transformer& m, const std::string& what,
                       int64_t max_rank = 0) {
  try {
    ServedAdapter::load(dir, m, max_rank);
    ADD_FAILURE() << "loading " << dir << " should fail with " << what;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

TEST_F(ServedAdapters, MalformedDirectoriesNameTheFileAndKey) {
  Allocator alloc;
  Transformer base(base_config(), alloc);
  expect_load_error((root_ / "none").string(), base, "does not exist");
  expect_load_error(dir(0), base, "above --max-lora-rank", 1);
  const fs::path bad = root_ / "bad";
  fs::copy(dir(1), bad);
  std::ofstream(bad / "adapter_config.json") << "{\"peft_type\": \"LORA\", \"r\": ";
  expect_load_error(bad.string(), base, "adapter_config.json: malformed JSON");
  std::ofstream(bad / "adapter_config.json")
      << R"({"peft_type": "LORA", "r": 4, "target_modules": ["q_proj", "c_attn"]})";
  expect_load_error(bad.string(), base, "target module 'c_attn'");
  std::ofstream(bad / "adapter_config.json")
      << R"({"peft_type": "LORA", "r": 3, "target_modules": ["q_proj", "v_proj"]})";
  expect_load_error(bad.string(), base, "has shape");  // r 3 against the file's r 4
  std::ofstream(bad / "adapter_config.json")
      << R"({"peft_type": "LORA", "r": 4, "target_modules": ["q_proj"]})";
  expect_load_error(bad.string(), base, "unexpected tensor");
  std::ofstream(bad / "adapter_config.json")
      << R"({"peft_type": "LORA", "r": 4, "target_modules": ["q_proj", "v_proj", "o_proj"]})";
  expect_load_error(bad.string(), base, "o_proj.lora_A.weight' is missing");
  fs::remove(bad / "adapter_model.safetensors");
  expect_load_error(bad.string(), base, "has no adapter_model.safetensors");
}

}  // namespace
}  // namespace parallm
