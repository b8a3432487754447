// The run schema (train/config/run_schema.h): a setting is one declaration.
// A test-only setting added to a copy of parallm's schema is read from a run
// file, kept in the JSON run record, set by its flag and listed by --help,
// with no other edit; every declared key and flag is unique; docs/settings.md
// is the reference generated from the declarations.
#include "train/config/run_schema.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

#include "base/error.h"
#include "common/run_config_file.h"
#include "train/config/run_config_json.h"
#include "train/config/run_flags.h"
#include "train/config/settings_reference.h"

namespace parallm {
namespace {

// parallm's schema plus one setting only this test declares. The run tree
// has no test-only member, so it writes one no other setting keys or records
// (verify's --dump-ops directory), under a new key and a new flag: every
// path it shows up on is the generated one.
RunSchema schema_with_test_setting() {
  RunSchema s = run_schema();
  s.settings.push_back(field_setting("training", "test_only_dir", "--test-only-dir",
                                     "a setting declared by a test alone",
                                     PX_FIELD(train.training.dump_ops_dir))
                           .checked([](const SettingValue& v) {
                             const auto& dir = std::get<std::string>(v);
                             return dir.empty() ? std::string("must not be empty") : "";
                           }));
  return s;
}

TEST(RunSchema, OneDeclarationReachesTheFileTheRecordTheFlagsAndHelp) {
  const RunSchema schema = schema_with_test_setting();
  // The run file.
  const RunConfig from_file = load_run_config(
      testing::write_toml("[training]\ntest_only_dir = \"/abs/a\"\n"), RunConfig{}, schema);
  EXPECT_EQ(from_file.train.training.dump_ops_dir, "/abs/a");
  // parallm's own schema does not know the key.
  EXPECT_THROW(load_run_config(testing::write_toml("[training]\ntest_only_dir = \"/abs/a\"\n")),
               Error);
  // The run record: written under its table and read back.
  const nlohmann::json record = run_config_json(from_file, schema);
  ASSERT_TRUE(record["training"].contains("test_only_dir")) << record.dump();
  EXPECT_EQ(record["training"]["test_only_dir"], "/abs/a");
  EXPECT_EQ(run_config_from_json(record, "test", schema).train.training.dump_ops_dir, "/abs/a");
  EXPECT_FALSE(run_config_json(from_file)["training"].contains("test_only_dir"));
  // The flag, its check, and --help.
  CLI::App app;
  RunFlags flags(&app, schema);
  app.parse(std::vector<std::string>{"b", "--test-only-dir"});  // CLI11 parses in reverse
  RunConfig from_flags;
  flags.apply(from_flags);
  EXPECT_EQ(from_flags.train.training.dump_ops_dir, "b");
  EXPECT_TRUE(flags.given("--test-only-dir"));
  EXPECT_NE(app.help().find("--test-only-dir"), std::string::npos);
  EXPECT_NE(app.help().find("a setting declared by a test alone"), std::string::npos);
  CLI::App bad_app;
  RunFlags bad_flags(&bad_app, schema);
  bad_app.parse(std::vector<std::string>{"", "--test-only-dir"});
  RunConfig rc;
  try {
    bad_flags.apply(rc);
    FAIL() << "a value its check refuses was taken";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "--test-only-dir must not be empty");
  }
  EXPECT_NE(testing::run_config_error("[model]\nlora_rank = 0\n")
                .find("[model] lora_rank must be positive, got 0"),
            std::string::npos);
}

TEST(RunSchema, KeysAndFlagsAreUnique) {
  std::set<std::string> keys, flags;
  for (const Setting& s : run_schema().settings) {
    if (!s.key.empty()) EXPECT_TRUE(keys.insert(s.table + "." + s.key).second) << s.key;
    EXPECT_TRUE(run_schema().has_table(s.table)) << s.table;
    EXPECT_TRUE(s.set) << s.key;
    if (s.recorded) EXPECT_TRUE(s.get) << s.key << " is recorded but has no getter";
    for (const std::string& f : s.flag_names()) EXPECT_TRUE(flags.insert(f).second) << f;
  }
}

// A switch sets its value without one; a flag keeps its key in --help where
// the names differ.
TEST(RunSchema, SwitchesAndKeysInHelp) {
  CLI::App app;
  RunFlags flags(&app, run_schema());
  app.parse(std::vector<std::string>{"--no-overlap", "--sequence-parallel"});
  RunConfig rc;
  flags.apply(rc);
  EXPECT_FALSE(rc.train.parallelism.dp.overlap);
  EXPECT_TRUE(rc.train.parallelism.sequence_parallel);
  EXPECT_FALSE(flags.given("--tp"));
  EXPECT_NE(app.help().find("[parallelism] overlap_grad_reduce"), std::string::npos);
  EXPECT_EQ(app.help().find("--inject-fault"), std::string::npos) << "verify's flags are hidden";
}

// docs/settings.md is the generated reference, not a copy kept by hand.
TEST(RunSchema, DocsSettingsIsTheGeneratedReference) {
  std::ifstream in(std::string(PARALLM_SOURCE_DIR) + "/docs/settings.md");
  ASSERT_TRUE(in) << "docs/settings.md is missing";
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), settings_reference(run_schema()))
      << "docs/settings.md is stale: build/parallm settings > docs/settings.md";
}

}  // namespace
}  // namespace parallm
