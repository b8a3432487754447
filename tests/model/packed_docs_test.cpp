// Packed documents through the whole model (reference check): a row packed
// from several EOD-separated documents, trained with
// --reset-attention-mask --reset-position-ids, has the loss and the
// gradients of its documents run one by one (each from position 0), for
// GPT-2 (learned positions) and LLaMA (RoPE, GQA); with --eod-mask-loss the
// EOD inputs carry no loss. Without the flags the documents see each other.
#include <gtest/gtest.h>

#include <cmath>

#include "base/rng.h"
#include "common/test_models.h"
#include "model/transformer.h"

namespace parallm {
namespace {

constexpr int32_t kEod = 5;

std::vector<int32_t> tokens(int64_t n, int64_t vocab, uint64_t seed) {
  std::vector<int32_t> t(n);
  const uint64_t key = stream_key(seed, "packed");
  for (int64_t i = 0; i < n; ++i) {
    t[i] = static_cast<int32_t>(uniform_at(key, i) * vocab);
    if (t[i] == kEod) t[i] = kEod + 1;
  }
  return t;
}

std::vector<float> grads(Transformer& m) {
  const float* g = m.params().flat_grads().data<float>();
  return std::vector<float>(g, g + m.params().total_numel());
}

double max_rel_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 1e-12;
  for (size_t i = 0; i < a.size(); ++i) {
    num = std::max(num, std::abs(static_cast<double>(a[i]) - b[i]));
    den = std::max(den, std::abs(static_cast<double>(b[i])));
  }
  return num / den;
}

class PackedDocsModel : public ::testing::TestWithParam<bool> {
 protected:
  ModelConfig cfg() const { return GetParam() ? testing::tiny_llama() : testing::tiny_gpt2(); }
};

// Documents of 6, 1 and 9 tokens (the first two closed by an EOD, the last
// cut by the window) and a 4-token tail.
TEST_P(PackedDocsModel, PackedRowEqualsDocumentsRunAlone) {
  const std::vector<int64_t> lengths = {6, 1, 9, 4};
  int64_t T = 0;
  for (int64_t n : lengths) T += n;
  std::vector<int32_t> in = tokens(T, cfg().vocab_size, 1);
  const std::vector<int32_t> tg = tokens(T, cfg().vocab_size, 2);
  int64_t end = 0;
  for (size_t d = 0; d + 1 < lengths.size(); ++d) in[(end += lengths[d]) - 1] = kEod;
  for (bool mask_loss : {false, true}) {
    SCOPED_TRACE(mask_loss ? "eod-mask-loss" : "loss on every token");
    Allocator a;
    Transformer m(cfg(), a);
    m.params().init_random(3);
    m.set_packed_docs({.reset_attention_mask = true,
                       .reset_position_ids = true,
                       .eod_mask_loss = mask_loss,
                       .eod = kEod});
    const LossSum packed = m.forward_backward(in.data(), tg.data(), 1, T, 1.0);
    const std::vector<float> g_packed = grads(m);
    EXPECT_EQ(packed.count, mask_loss ? T - 3 : T);
    m.params().zero_grads();
    m.set_packed_docs({});
    LossSum alone;
    int64_t t0 = 0;
    for (int64_t n : lengths) {
      std::vector<int32_t> din(in.begin() + t0, in.begin() + t0 + n);
      std::vector<int32_t> dtg(tg.begin() + t0, tg.begin() + t0 + n);
      if (mask_loss)
        for (int64_t i = 0; i < n; ++i)
          if (din[i] == kEod) dtg[i] = -1;
      const LossSum l = m.forward_backward(din.data(), dtg.data(), 1, n, 1.0);
      alone.sum += l.sum;
      alone.count += l.count;
      t0 += n;
    }
    EXPECT_EQ(alone.count, packed.count);
    EXPECT_NEAR(packed.sum, alone.sum, 1e-5 * std::abs(alone.sum));
    EXPECT_LT(max_rel_diff(g_packed, grads(m)), 1e-5);
    // forward_loss (evaluation) applies the same documents.
    m.set_packed_docs({.reset_attention_mask = true,
                       .reset_position_ids = true,
                       .eod_mask_loss = mask_loss,
                       .eod = kEod});
    const LossSum eval = m.forward_loss(in.data(), tg.data(), 1, T);
    EXPECT_EQ(eval.count, packed.count);
    EXPECT_NEAR(eval.sum, packed.sum, 1e-5 * std::abs(packed.sum));
  }
  // Without the flags the later documents attend to the earlier ones.
  Allocator a;
  Transformer m(cfg(), a);
  m.params().init_random(3);
  const double plain = m.forward_loss(in.data(), tg.data(), 1, T).sum;
  m.set_packed_docs({.reset_attention_mask = true, .reset_position_ids = true, .eod = kEod});
  EXPECT_GT(std::abs(m.forward_loss(in.data(), tg.data(), 1, T).sum - plain), 1e-3);
}

TEST_P(PackedDocsModel, RejectsEodOutsideVocabulary) {
  Allocator a;
  Transformer m(cfg(), a);
  try {
    m.set_packed_docs({.reset_attention_mask = true, .eod = 1000});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("end-of-document token (1000)"), std::string::npos)
        << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(Families, PackedDocsModel, ::testing::Bool());

}  // namespace
}  // namespace parallm
