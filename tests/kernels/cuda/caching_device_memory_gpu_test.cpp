// Tensors on the GPU through an Allocator over CachingDeviceMemory: zeroed
// allocation, tag stats in requested bytes, reserved bytes in rounded blocks,
// block reuse (reserved stays flat), host<->device and device<->device copies.
#include "kernels/cuda/caching_device_memory.h"

#include <vector>

#include "common/gpu_test.h"
#include "tensor/tensor.h"

namespace parallm {
namespace {

using CachingDeviceMemoryGpu = testing::GpuTest;
using cuda::CachingDeviceMemory;

std::vector<float> to_host(const Tensor& t) {
  Allocator host;
  Tensor h = Tensor::zeros(host, t.shape(), t.dtype(), MemTag::Workspace);
  h.copy_from(t);
  return std::vector<float>(h.data<float>(), h.data<float>() + h.numel());
}

TEST(CachingDeviceMemory, BlockSizes) {  // no device needed
  EXPECT_EQ(CachingDeviceMemory::block_size(1), 512u);
  EXPECT_EQ(CachingDeviceMemory::block_size(512), 512u);
  EXPECT_EQ(CachingDeviceMemory::block_size(513), 1024u);
  EXPECT_EQ(CachingDeviceMemory::block_size(size_t{1} << 20), size_t{1} << 20);
  EXPECT_EQ(CachingDeviceMemory::block_size((size_t{1} << 20) + 1), size_t{2} << 20);
  EXPECT_EQ(CachingDeviceMemory::block_size(size_t{3} << 20), size_t{4} << 20);
}

TEST_F(CachingDeviceMemoryGpu, ZerosOnDeviceCountTagsAndReserved) {
  CachingDeviceMemory mem;
  Allocator a(mem);
  EXPECT_EQ(a.device(), Device::CUDA);
  {
    Tensor w = Tensor::zeros(a, {250}, DType::F32, MemTag::Parameter, Device::CUDA);
    Tensor x = Tensor::zeros(a, {3, 1 << 18}, DType::F32, MemTag::Activation, Device::CUDA);
    EXPECT_EQ(w.device(), Device::CUDA);
    cudaPointerAttributes attr{};
    PX_CUDA(cudaPointerGetAttributes(&attr, w.raw()));
    EXPECT_EQ(attr.type, cudaMemoryTypeDevice);
    EXPECT_EQ(a.current(MemTag::Parameter), 1000);            // requested bytes
    EXPECT_EQ(a.current(MemTag::Activation), 3 * (1 << 20));  // 3 MiB
    EXPECT_EQ(mem.reserved_bytes(), 1024 + (4 << 20));        // 512 B and 2 MiB rounding
    for (float v : to_host(w)) ASSERT_EQ(v, 0.f);
    for (float v : to_host(x.narrow0(2, 1))) ASSERT_EQ(v, 0.f);
  }
  EXPECT_EQ(a.current(MemTag::Activation), 0);
  EXPECT_EQ(a.peak(MemTag::Activation), 3 * (1 << 20));
  EXPECT_EQ(a.stats().total_peak, 1000 + 3 * (1 << 20));
  EXPECT_EQ(mem.reserved_bytes(), 1024 + (4 << 20));  // cached, not returned
  EXPECT_EQ(mem.cached_bytes(), 1024 + (4 << 20));
  mem.empty_cache();
  EXPECT_EQ(mem.reserved_bytes(), 0);
  EXPECT_EQ(mem.peak_reserved_bytes(), 1024 + (4 << 20));
}

TEST_F(CachingDeviceMemoryGpu, ReallocatingTheSameSizeReusesTheBlockZeroed) {
  CachingDeviceMemory mem;
  Allocator a(mem);
  Allocator host;
  Tensor src = Tensor::zeros(host, {1000}, DType::F32, MemTag::Workspace);
  for (int i = 0; i < 1000; ++i) src.data<float>()[i] = 1.f + i;
  void* first = nullptr;
  for (int step = 0; step < 5; ++step) {
    Tensor t = Tensor::zeros(a, {1000}, DType::F32, MemTag::Activation, Device::CUDA);
    if (step == 0) first = t.raw();
    EXPECT_EQ(t.raw(), first) << "step " << step;
    for (float v : to_host(t)) ASSERT_EQ(v, 0.f) << "a reused block comes back zeroed";
    t.copy_from(src);  // dirty it for the next step
    EXPECT_EQ(mem.reserved_bytes(), 4096);
  }
  EXPECT_EQ(mem.peak_reserved_bytes(), 4096);
}

TEST_F(CachingDeviceMemoryGpu, CopiesRoundTripAndZeroViews) {
  CachingDeviceMemory mem;
  Allocator dev(mem);
  Allocator host;
  Tensor h = Tensor::zeros(host, {4, 5}, DType::F32, MemTag::Workspace);
  for (int i = 0; i < 20; ++i) h.data<float>()[i] = 0.5f * i - 3.f;
  Tensor d = Tensor::zeros(dev, {4, 5}, DType::F32, MemTag::Workspace, Device::CUDA);
  d.copy_from(h);
  Tensor d2 = Tensor::zeros(dev, {20}, DType::F32, MemTag::Workspace, Device::CUDA);
  d2.copy_from(d);  // device -> device
  d2.flat_range(5, 5).zero_();
  auto back = to_host(d2);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(back[i], i >= 5 && i < 10 ? 0.f : 0.5f * i - 3.f);
  auto first = to_host(d);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(first[i], 0.5f * i - 3.f);
}

TEST_F(CachingDeviceMemoryGpu, DeviceMismatchIsRefused) {
  CachingDeviceMemory mem;
  Allocator dev(mem);
  Allocator host;
  EXPECT_THROW(Tensor::zeros(host, {4}, DType::F32, MemTag::Workspace, Device::CUDA), Error);
  EXPECT_THROW(Tensor::zeros(dev, {4}, DType::F32, MemTag::Workspace, Device::CPU), Error);
  EXPECT_EQ(mem.reserved_bytes(), 0);
}

}  // namespace
}  // namespace parallm
