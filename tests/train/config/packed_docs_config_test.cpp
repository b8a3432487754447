// The packed-document settings of a run ([data] reset_attention_mask,
// reset_position_ids, eod_mask_loss, eod_token; the flags of the same
// names): read from TOML with the byte tokenizer's end-of-text as the
// default EOD, and an EOD outside the vocabulary refused naming both values.
#include <gtest/gtest.h>

#include "base/error.h"
#include "common/run_config_file.h"
#include "train/config/train_config.h"

namespace parallm {
namespace {

TEST(PackedDocsConfig, ReadsTheDataTable) {
  RunConfig rc = load_run_config(testing::write_toml(R"(
[data]
train = "a.bin"
reset_attention_mask = true
reset_position_ids = true
eod_mask_loss = true
eod_token = 50256
)"));
  const PackedDocs& d = rc.train.data.docs;
  EXPECT_TRUE(d.reset_attention_mask);
  EXPECT_TRUE(d.reset_position_ids);
  EXPECT_TRUE(d.eod_mask_loss);
  EXPECT_EQ(d.eod, 50256);
  RunConfig plain = load_run_config(testing::write_toml("[data]\ntrain = \"a.bin\"\n"));
  EXPECT_FALSE(plain.train.data.docs.any());
  EXPECT_EQ(plain.train.data.docs.eod, 256);  // the byte tokenizer's end-of-text
}

TEST(PackedDocsConfig, EodOutsideTheVocabularyIsRefused) {
  TrainConfig t;
  t.data.train = {"x.bin"};
  ModelConfig m;
  m.vocab_size = 200;
  t.validate(m);  // flags off: the default EOD (256) is not used
  t.data.docs.reset_attention_mask = true;
  try {
    t.validate(m);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("(--eod-token 256) is outside the vocabulary (200)"),
              std::string::npos)
        << e.what();
  }
  t.data.docs.eod = 3;
  t.validate(m);
}

}  // namespace
}  // namespace parallm
