#include "tensor/tensor.h"

#include <gtest/gtest.h>

#include "tensor/half.h"

namespace parallm {

TEST(Allocator, TracksCurrentAndPeakPerTag) {
  Allocator a;
  {
    Tensor p = Tensor::zeros(a, {10, 4}, DType::F32, MemTag::Parameter);
    Tensor x = Tensor::zeros(a, {8}, DType::BF16, MemTag::Activation);
    EXPECT_EQ(a.current(MemTag::Parameter), 160);
    EXPECT_EQ(a.current(MemTag::Activation), 16);
    Tensor v = p.narrow0(2, 3);  // a view allocates nothing
    EXPECT_EQ(v.numel(), 12);
    EXPECT_EQ(a.current(MemTag::Parameter), 160);
  }
  EXPECT_EQ(a.current(MemTag::Parameter), 0);
  EXPECT_EQ(a.peak(MemTag::Parameter), 160);
  EXPECT_EQ(a.stats().total_peak, 176);
  a.reset_peaks();
  EXPECT_EQ(a.peak(MemTag::Parameter), 0);
}

TEST(Tensor, ViewsShareStorage) {
  Allocator a;
  Tensor t = Tensor::zeros(a, {4, 3}, DType::F32, MemTag::Workspace);
  for (int i = 0; i < 12; ++i) t.data<float>()[i] = static_cast<float>(i);
  Tensor r = t.narrow0(1, 2);
  EXPECT_EQ(r.shape(), (Shape{2, 3}));
  EXPECT_EQ(r.data<float>()[0], 3.0f);
  Tensor f = t.flat_range(5, 4).view({2, 2});
  EXPECT_EQ(f.data<float>()[3], 8.0f);
  EXPECT_THROW(t.view({5, 3}), Error);
  EXPECT_THROW(t.narrow0(3, 2), Error);
  EXPECT_THROW(t.data<double>(), Error);
}

TEST(Half, Bf16AndF16RoundTrip) {
  EXPECT_EQ(bf16_to_f32(f32_to_bf16(1.0f)), 1.0f);
  EXPECT_EQ(bf16_to_f32(f32_to_bf16(-3.5f)), -3.5f);
  // 1 + 2^-8 is exactly halfway between two bf16 values: rounds to even (1.0).
  EXPECT_EQ(bf16_to_f32(f32_to_bf16(1.00390625f)), 1.0f);
  for (float f : {0.0f, 1.0f, -2.5f, 65504.0f, 6.103515625e-05f, 5.9604644775390625e-08f})
    EXPECT_EQ(f16_to_f32(f32_to_f16(f)), f) << f;
  EXPECT_TRUE(std::isinf(f16_to_f32(f32_to_f16(1e6f))));
}

}  // namespace parallm
