// One model on every device, first step: the dense Transformer (GPT-2 and
// LLaMA, one process) trains on the test device (tensor/test_device_memory.h),
// whose memory host code cannot read, and gives the host's bits: the loss,
// every gradient, the AdamW step and the logits. Any host access to device
// memory left in the layers, the loss or the optimizer faults here.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "common/random_tokens.h"
#include "common/test_models.h"
#include "model/transformer.h"
#include "optim/optimizer.h"
#include "tensor/test_device_memory.h"

namespace parallm {
namespace {

// A device tensor's values, copied to the host.
std::vector<float> host_copy(const Tensor& t) {
  Allocator a;
  Tensor h = Tensor::zeros(a, t.shape(), DType::F32, MemTag::Workspace);
  h.copy_from(t);
  return std::vector<float>(h.data<float>(), h.data<float>() + h.numel());
}

void expect_same_bits(const Tensor& host, const Tensor& device, const char* what) {
  ASSERT_EQ(host.device(), Device::CPU);
  ASSERT_EQ(device.device(), Device::Test);
  const std::vector<float> d = host_copy(device);
  ASSERT_EQ(static_cast<int64_t>(d.size()), host.numel());
  int64_t differ = 0;
  for (int64_t i = 0; i < host.numel(); ++i)
    differ += std::memcmp(&d[i], host.data<float>() + i, sizeof(float)) != 0;
  EXPECT_EQ(differ, 0) << what << ": " << differ << " of " << host.numel() << " elements differ";
}

class TestDeviceModel : public ::testing::TestWithParam<bool> {
 protected:
  ModelConfig cfg() const { return GetParam() ? testing::tiny_llama() : testing::tiny_gpt2(); }
};

TEST_P(TestDeviceModel, TrainsWithTheHostsBits) {
  const int64_t B = 2, T = 16;
  const ModelConfig c = cfg();
  Allocator host;
  TestDeviceMemory mem;
  Allocator dev(mem);
  Transformer mh(c, host), md(c, dev);
  ASSERT_EQ(md.params().flat_values().device(), Device::Test);
  mh.params().init_random(7);
  md.params().init_random(7);
  expect_same_bits(mh.params().flat_values(), md.params().flat_values(), "initial values");

  OptimizerConfig oc;
  oc.lr = 1e-2;
  const int64_t n = mh.params().total_numel();
  std::unique_ptr<Optimizer> oh = make_optimizer(oc, mh.params(), host, 0, n, n);
  std::unique_ptr<Optimizer> od = make_optimizer(oc, md.params(), dev, 0, n, n);
  for (int step = 0; step < 3; ++step) {
    SCOPED_TRACE(step);
    const std::vector<int32_t> in = testing::random_tokens(B * T, c.vocab_size, 10 + step);
    const std::vector<int32_t> tg = testing::random_tokens(B * T, c.vocab_size, 20 + step);
    mh.params().zero_grads();
    md.params().zero_grads();
    const LossSum lh = mh.forward_backward(in.data(), tg.data(), B, T, 1.0 / (B * T));
    const LossSum ld = md.forward_backward(in.data(), tg.data(), B, T, 1.0 / (B * T));
    EXPECT_EQ(lh.count, ld.count);
    EXPECT_EQ(std::memcmp(&lh.sum, &ld.sum, sizeof(double)), 0) << lh.sum << " vs " << ld.sum;
    expect_same_bits(mh.params().flat_grads(), md.params().flat_grads(), "gradients");
    oh->step(mh.params(), oc.lr);
    od->step(md.params(), oc.lr);
    expect_same_bits(mh.params().flat_values(), md.params().flat_values(), "AdamW step");
  }
  const std::vector<int32_t> in = testing::random_tokens(B * T, c.vocab_size, 99);
  const Tensor logits_d = md.logits(in.data(), B, T);
  EXPECT_EQ(logits_d.device(), Device::Test);
  expect_same_bits(mh.logits(in.data(), B, T), logits_d, "logits");
  const LossSum eh = mh.forward_loss(in.data(), in.data(), B, T);
  const LossSum ed = md.forward_loss(in.data(), in.data(), B, T);
  EXPECT_EQ(eh.sum, ed.sum);
}

INSTANTIATE_TEST_SUITE_P(Arch, TestDeviceModel, ::testing::Values(false, true),
                         [](const auto& p) { return p.param ? "llama" : "gpt2"; });

}  // namespace
}  // namespace parallm
