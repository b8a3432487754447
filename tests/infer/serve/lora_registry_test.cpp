// The served LoRA adapters' registry and routes (infer/serve/lora_registry.h,
// lora_routes.h) and the per-adapter prefix-cache salt (scheduler.h): names
// checked, the base's name and duplicates refused, --max-loras held, unknown
// names 404 and malformed bodies 400 naming the field, a request's `model`
// resolved to its adapter, and a prompt cached under one adapter never
// handed to another (whose keys and values differ).
#include <gtest/gtest.h>

#include <filesystem>

#include "base/error.h"
#include "common/test_models.h"
#include "infer/serve/api_error.h"
#include "infer/serve/lora_routes.h"
#include "infer/serve/scheduler.h"
#include "io/peft_adapter.h"

namespace fs = std::filesystem;

namespace parallm::serve {
namespace {

class LoraRegistryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("lora_registry_" + std::to_string(reinterpret_cast<uintptr_t>(this)));
    ModelConfig c = testing::tiny_llama();
    c.lora.rank = 2;
    c.lora.targets = {"q", "v"};
    Allocator a;
    Transformer m(c, a);
    m.base_params().init_random(1);
    m.params().init_random(2);
    save_peft_adapter(dir_.string(), m, "tiny");
    base_.base_params().init_random(1);
  }
  void TearDown() override { fs::remove_all(dir_); }
  Allocator alloc_;
  Transformer base_{testing::tiny_llama(), alloc_};
  fs::path dir_;
};

template <typename F>
LoraRegistryError::Kind kind_of(F f) {
  try {
    f();
  } catch (const LoraRegistryError& e) {
    return e.kind;
  }
  ADD_FAILURE() << "no LoraRegistryError";
  return LoraRegistryError::Kind::BadAdapter;
}

TEST_F(LoraRegistryTest, LoadsListsUnloadsAndRefuses) {
  using Kind = LoraRegistryError::Kind;
  LoraRegistry reg(base_, "tiny", 2, 8);
  reg.load("sql", dir_.string());
  reg.load("chat/v2", dir_.string());
  ASSERT_EQ(reg.list().size(), 2u);
  EXPECT_EQ(reg.list()[0].name, "sql");
  EXPECT_NE(reg.list()[0].salt, reg.list()[1].salt);
  EXPECT_EQ(kind_of([&] { reg.load("third", dir_.string()); }), Kind::Full);
  EXPECT_EQ(kind_of([&] { reg.load("sql", dir_.string()); }), Kind::Exists);
  EXPECT_EQ(kind_of([&] { reg.unload("nope"); }), Kind::Unknown);
  const uint64_t salt = reg.find("sql")->salt;
  reg.unload("sql");
  EXPECT_FALSE(reg.find("sql"));
  EXPECT_EQ(kind_of([&] { reg.load("tiny", dir_.string()); }), Kind::Exists);  // the base's
  EXPECT_EQ(kind_of([&] { reg.load("a\"b", dir_.string()); }), Kind::BadAdapter);
  EXPECT_EQ(kind_of([&] { reg.load("", dir_.string()); }), Kind::BadAdapter);
  EXPECT_EQ(kind_of([&] { reg.load("x", (dir_ / "missing").string()); }), Kind::BadAdapter);
  reg.load("sql", dir_.string());  // loaded again: new factors, a new salt
  EXPECT_NE(reg.find("sql")->salt, salt);
  LoraRegistry low(base_, "tiny", 4, 1);
  EXPECT_EQ(kind_of([&] { low.load("r2", dir_.string()); }), Kind::BadAdapter);  // r 2 > 1
}

TEST_F(LoraRegistryTest, RoutesAnswerWithOpenAiErrors) {
  LoraRegistry reg(base_, "tiny", 4, 0);
  const ServedModel base{.name = "tiny", .context = 64};
  auto status = [](auto f) {
    try {
      f();
    } catch (const ApiError& e) {
      return e.status;
    }
    return 200;
  };
  const std::string load = R"({"lora_name": "a", "lora_path": ")" + dir_.string() + R"("})";
  EXPECT_EQ(load_lora_adapter(&reg, load), "Success: LoRA adapter 'a' added successfully.");
  EXPECT_EQ(status([&] { load_lora_adapter(nullptr, load); }), 400);  // LoRA off
  EXPECT_EQ(status([&] { load_lora_adapter(&reg, "{"); }), 400);
  EXPECT_EQ(status([&] { load_lora_adapter(&reg, "[1]"); }), 400);
  EXPECT_EQ(status([&] { load_lora_adapter(&reg, R"({"lora_name": 3, "lora_path": "x"})"); }),
            400);
  EXPECT_EQ(status([&] { unload_lora_adapter(&reg, R"({"lora_name": "zz"})"); }), 404);
  const nlohmann::json cards = lora_model_cards(&reg, base);
  ASSERT_EQ(cards.size(), 1u);
  EXPECT_EQ(cards[0]["id"], "a");
  EXPECT_EQ(cards[0]["parent"], "tiny");
  ApiRequest r;
  r.model = "a";
  EXPECT_EQ(resolve_model(r, &reg, base), "a");
  EXPECT_NE(r.lora, nullptr);
  EXPECT_NE(r.lora_salt, 0u);
  ApiRequest b;
  b.model = "tiny";
  EXPECT_EQ(resolve_model(b, &reg, base), "");
  EXPECT_EQ(b.lora, nullptr);
  ApiRequest u;
  u.model = "b";
  EXPECT_EQ(status([&] { resolve_model(u, &reg, base); }), 404);
  EXPECT_EQ(unload_lora_adapter(&reg, R"({"lora_name": "a"})"),
            "Success: LoRA adapter 'a' removed successfully.");
  EXPECT_NE(r.lora, nullptr);  // a request under way keeps its adapter's factors
}

TEST(LoraModules, NameEqualsPath) {
  EXPECT_EQ(parse_lora_module("sql=/a/b=c"), (std::pair<std::string, std::string>{"sql", "/a/b=c"}));
  EXPECT_THROW(parse_lora_module("sql"), Error);
  EXPECT_THROW(parse_lora_module("=/a"), Error);
  EXPECT_THROW(parse_lora_module("sql="), Error);
}

// A prompt whose blocks were computed under one salt (adapter) is found
// again under that salt only.
TEST(LoraPrefixSalt, BlocksAreSharedWithinASaltOnly) {
  BlockPool pool(64, 4);
  Scheduler s({.max_batched_tokens = 64, .max_running = 8, .prefix_cache = true}, pool);
  const std::vector<int32_t> prompt = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  s.add(1, prompt, 8, 77);
  StepPlan p = s.step();
  s.complete(p, std::vector<int32_t>{10});
  auto cached_at_admission = [&](uint64_t id, uint64_t salt) {
    s.add(id, prompt, 8, salt);
    const StepPlan q = s.step();
    int64_t cached = -1;
    for (const ScheduledSeq& e : q.seqs)
      if (e.id == id) cached = e.cached_tokens;
    s.complete(q, std::vector<int32_t>(static_cast<size_t>(q.logits_rows()), 10));
    return cached;
  };
  EXPECT_EQ(cached_at_admission(2, 0), 0);   // the base model: nothing shared
  EXPECT_EQ(cached_at_admission(3, 78), 0);  // another adapter: nothing shared
  EXPECT_EQ(cached_at_admission(4, 77), 8);  // the same adapter: both full blocks
}

}  // namespace
}  // namespace parallm::serve
