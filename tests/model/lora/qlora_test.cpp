// QLoRA on the transformer (docs/qlora.md): the NF4 base gives the loss and
// adapter gradients of a LoRA model whose base weights are the
// NF4-dequantised ones; the allocator measures bits per base weight over a
// whole model's block linears; no fp32 copy of a whole layer exists during a
// step (Workspace peak: one dequantisation tile); --qlora's checks.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "base/rng.h"
#include "common/test_models.h"
#include "kernels/cpu/nf4.h"
#include "kernels/cpu/nf4_gemm.h"
#include "kernels/cpu/nf4_weight.h"
#include "model/lora/lora_merge.h"
#include "model/lora/qlora_base.h"
#include "model/transformer.h"
#include "nn/matmul_precision.h"

namespace parallm {
namespace {

std::vector<int32_t> tokens(int64_t n, int64_t vocab, uint64_t seed) {
  std::vector<int32_t> t(n);
  const uint64_t key = stream_key(seed, "tokens");
  for (int64_t i = 0; i < n; ++i) t[i] = static_cast<int32_t>(uniform_at(key, i) * vocab);
  return t;
}

// Every block linear 64-aligned, several blocks of 256 absmax per weight.
ModelConfig qlora_model(bool llama, bool qlora, bool double_quant) {
  ModelConfig c = llama ? testing::tp_llama() : testing::tp_gpt2();
  c.hidden = 128;
  c.head_dim = llama ? 16 : 32;
  c.intermediate = llama ? 256 : 512;
  c.lora.rank = 4;
  c.lora.alpha = 16.0;
  c.lora.targets = {"q", "v", "down"};  // untargeted linears are NF4 too
  c.lora.qlora = qlora;
  c.lora.double_quant = double_quant;
  return c;
}

// Makes every B non-zero (a trained adapter), so the adapters matter.
void randomise_b(const ParameterSet& ps) {
  for (int i = 0; i < ps.size(); ++i) {
    if (ps.spec(i).name.back() != 'B') continue;
    float* v = ps.value(ParamRef{i});
    const uint64_t key = stream_key(11, ps.spec(i).name);
    for (int64_t j = 0; j < ps.numel(i); ++j) v[j] = static_cast<float>(0.05 * normal_at(key, j));
  }
}

// The block linears of a full-precision base replaced by their NF4 round trip.
int dequantize_in_place(ParameterSet& base, bool double_quant, Allocator& a) {
  int n = 0;
  for (int i = 0; i < base.size(); ++i) {
    if (!is_block_linear_weight(base.spec(i).name)) continue;
    float* v = base.value(ParamRef{i});
    const cpu::Nf4Weight w(a, v, base.spec(i).shape[0], base.spec(i).shape[1], double_quant);
    w.dequantize(0, w.numel(), v);
    ++n;
  }
  return n;
}

struct Step {
  std::vector<float> logits, grads;
  double loss = 0;
};

Step step(Transformer& m, int64_t B, int64_t T) {
  const ModelConfig& c = m.config();
  auto in = tokens(B * T, c.vocab_size, 1), tg = tokens(B * T, c.vocab_size, 2);
  Step s;
  Tensor l = m.logits(in.data(), B, T);
  s.logits.assign(l.data<float>(), l.data<float>() + l.numel());
  m.params().zero_grads();
  s.loss = m.forward_backward(in.data(), tg.data(), B, T, 1.0 / static_cast<double>(B * T)).sum;
  const float* g = m.params().flat_grads().data<float>();
  s.grads.assign(g, g + m.params().total_numel());
  return s;
}

double max_rel_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double d = 0, mag = 1e-30;
  for (size_t i = 0; i < a.size(); ++i) {
    d = std::max(d, std::abs(static_cast<double>(a[i]) - b[i]));
    mag = std::max(mag, std::abs(static_cast<double>(b[i])));
  }
  return d / mag;
}

struct Case {
  bool llama, double_quant;
};

class QloraModel : public ::testing::TestWithParam<Case> {};

// Loss, logits and adapter gradients at step 0 equal those of a LoRA model
// over the NF4-dequantised base, to f32 summation error (the NF4 GEMM sums
// the same products tile by tile); and differ from the unquantised base.
TEST_P(QloraModel, EqualsLoraOverDequantisedBase) {
  const Case k = GetParam();
  Allocator aq, al, ap;
  Transformer q(qlora_model(k.llama, true, k.double_quant), aq);
  Transformer l(qlora_model(k.llama, false, false), al);
  Transformer plain(qlora_model(k.llama, false, false), ap);
  for (Transformer* t : {&q, &l, &plain}) {
    t->base_params().init_random(5);
    t->params().init_random(6);
    randomise_b(t->params());
  }
  const QloraBase qb = quantize_base_nf4(q.base_params(), q.config(), {}, aq);
  const int linears = k.llama ? 7 : 6;
  EXPECT_EQ(qb.weights, 2 * linears);
  EXPECT_EQ(dequantize_in_place(l.base_params(), k.double_quant, al), 2 * linears);
  for (int i = 0; i < q.base_params().size(); ++i) {  // NF4 exactly where bnb's Linear4bit is
    const std::string& name = q.base_params().spec(i).name;
    const bool nf4 = q.base_params().nf4(ParamRef{i}) != nullptr;
    EXPECT_EQ(nf4, is_block_linear_weight(name)) << name;
    EXPECT_EQ(nf4, q.base_params().value(ParamRef{i}) == nullptr) << name;
  }
  const int64_t B = 2, T = 16;
  const Step sq = step(q, B, T), sl = step(l, B, T), sp = step(plain, B, T);
  EXPECT_LT(max_rel_diff(sq.logits, sl.logits), 1e-5);
  EXPECT_NEAR(sq.loss, sl.loss, 1e-6 * std::abs(sl.loss));
  ASSERT_EQ(sq.grads.size(), sl.grads.size());
  EXPECT_LT(max_rel_diff(sq.grads, sl.grads), 1e-5);
  EXPECT_GT(max_rel_diff(sq.logits, sp.logits), 1e-3) << "NF4 changes the base";
  // Under bf16 GEMMs too (each tile rounded as a 16-bit weight copy would
  // be): the 16-bit GEMM and the f32 GEMM over rounded tiles sum in another
  // order, so an output near a bf16 rounding boundary may round the other
  // way as the next GEMM's input: one bf16 ulp, at most 2^-7 of the value.
  // Such flips are rare (an f32 difference of ~2^-24 must straddle a
  // boundary 2^-8 apart), so a logit or gradient sees at most one in its
  // sum: within one ulp of the tensor's largest value, 2^-7
  // (docs/testing.md, "bf16 against bf16"). The loss, a mean over B*T
  // tokens, keeps the precision tests' 2e-3.
  MatmulPrecision pq(Precision::BF16, q.base_params(), aq),
      pl(Precision::BF16, l.base_params(), al);
  q.set_compute(&pq, Recompute::None);
  l.set_compute(&pl, Recompute::None);
  const Step bq = step(q, B, T), bl = step(l, B, T);
  constexpr double kBf16Ulp = 0x1p-7;
  EXPECT_NEAR(bq.loss, bl.loss, 2e-3 * std::abs(bl.loss));
  EXPECT_LT(max_rel_diff(bq.logits, bl.logits), kBf16Ulp);
  EXPECT_LT(max_rel_diff(bq.grads, bl.grads), kBf16Ulp);
}

INSTANTIATE_TEST_SUITE_P(Families, QloraModel,
                         ::testing::Values(Case{true, false}, Case{true, true}, Case{false, false},
                                           Case{false, true}),
                         [](const auto& info) {
                           return std::string(info.param.llama ? "Llama" : "Gpt2") +
                                  (info.param.double_quant ? "DoubleQuant" : "");
                         });

// The allocator measures a whole model's base: after quantisation the
// Parameter bytes are the adapters' and the kept f32 values' plus exactly the
// NF4 storage, which is <= 4.2 bits per block-linear weight with double
// quantisation (4.5 without); no f32 copy of a block linear remains.
TEST(QloraModelMemory, AllocatorBitsPerBaseWeight) {
  for (bool dq : {false, true}) {
    ModelConfig c = qlora_model(true, true, dq);
    c.hidden = 512;
    c.head_dim = 64;
    c.intermediate = 1024;
    c.n_layers = 3;
    Allocator a;
    Transformer m(c, a);
    m.base_params().init_random(3);
    int64_t linear_numel = 0, kept = 0;
    for (int i = 0; i < m.base_params().size(); ++i) {
      const int64_t n = m.base_params().numel(i);
      if (is_block_linear_weight(m.base_params().spec(i).name))
        linear_numel += n;
      else
        kept += (n + 15) / 16 * 16;
    }
    EXPECT_EQ(linear_numel, 3 * (2 * 512 * 512 + 2 * 256 * 512 + 3 * 512 * 1024));  // q o, k v, MLP
    const int64_t before = a.current(MemTag::Parameter);
    const int64_t f32_before = m.base_params().f32_value_numel() * int64_t{4};
    const QloraBase q = quantize_base_nf4(m.base_params(), c, {}, a);
    EXPECT_EQ(q.numel, linear_numel);
    EXPECT_EQ(m.base_params().f32_value_numel(), kept);
    // What the allocator gained: the NF4 storage, less the f32 values dropped.
    const int64_t nf4_bytes =
        a.current(MemTag::Parameter) - before + f32_before - kept * int64_t{4};
    EXPECT_EQ(nf4_bytes, q.nf4_bytes);
    const double bits = 8.0 * static_cast<double>(nf4_bytes) / static_cast<double>(linear_numel);
    if (dq) {
      EXPECT_LE(bits, 4.2);
      EXPECT_NEAR(bits, 4.0 + 8.0 / 64 + 32.0 / (64 * 256), 1e-3);
    } else {
      EXPECT_DOUBLE_EQ(bits, 4.5);
    }
    std::printf("QLoRA base, %s: %.4f bits per block-linear weight (allocator)\n",
                dq ? "double quantisation" : "fp32 absmax", bits);
  }
}

// A training step over layers whose f32 weights are 1 MiB each holds
// at most one 256 KiB dequantisation tile of them: the Workspace peak of a
// tiny batch stays far below one layer's weight.
TEST(QloraModelMemory, NoWholeLayerCopyDuringAStep) {
  ModelConfig c = qlora_model(true, true, true);
  c.hidden = 512;
  c.head_dim = 64;
  c.intermediate = 512;
  c.vocab_size = 256;
  Allocator a;
  Transformer m(c, a);
  m.base_params().init_random(3);
  m.params().init_random(4);
  quantize_base_nf4(m.base_params(), c, {}, a);
  const int64_t layer_bytes = 512 * 512 * 4;  // q, o, gate, up, down: 1 MiB each
  a.reset_peaks();
  auto in = tokens(2, c.vocab_size, 1), tg = tokens(2, c.vocab_size, 2);
  m.forward_backward(in.data(), tg.data(), 1, 2, 0.5);
  const int64_t tile = cpu::kNf4TileBytes;
  EXPECT_GE(a.peak(MemTag::Workspace), tile);
  EXPECT_LT(a.peak(MemTag::Workspace), tile + 64 * 1024);
  EXPECT_LT(a.peak(MemTag::Workspace), layer_bytes / 2);
}

TEST(QloraConfig, FlagsNeedLora) {
  ModelConfig c = testing::tiny_llama();
  c.lora.qlora = true;
  try {
    c.validate();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--qlora trains LoRA adapters"), std::string::npos)
        << e.what();
  }
  c = qlora_model(true, false, true);
  try {
    c.validate();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--double-quant"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(qlora_model(true, true, true).validate());
}

// Quantisation is a pure function of the base's values: a resume, which
// rebuilds the base from the same seed (or --init-from), gets the same bytes.
TEST(QloraModelMemory, RequantisationIsDeterministic) {
  const ModelConfig c = qlora_model(true, true, true);
  Allocator a1, a2;
  Transformer m1(c, a1), m2(c, a2);
  for (Transformer* m : {&m1, &m2}) m->base_params().init_random(9);
  quantize_base_nf4(m1.base_params(), c, {}, a1);
  quantize_base_nf4(m2.base_params(), c, {}, a2);
  for (int i = 0; i < m1.base_params().size(); ++i) {
    const cpu::Nf4Weight* w1 = m1.base_params().nf4(ParamRef{i});
    const cpu::Nf4Weight* w2 = m2.base_params().nf4(ParamRef{i});
    ASSERT_EQ(w1 == nullptr, w2 == nullptr);
    if (w1 == nullptr) continue;
    ASSERT_EQ(w1->stored_bytes(), w2->stored_bytes());
    EXPECT_EQ(0, std::memcmp(w1->packed().raw(), w2->packed().raw(), w1->packed().nbytes()));
    EXPECT_EQ(0, std::memcmp(w1->qabsmax().raw(), w2->qabsmax().raw(), w1->qabsmax().nbytes()));
    EXPECT_EQ(w1->offset(), w2->offset());
  }
}

}  // namespace
}  // namespace parallm
