// The Allocator over a MemoryResource: host memory by default with the old
// stats, and a resource of another device (a host-backed stand-in here, so
// the dispatch is tested without a GPU) for allocation, zero_ and copy_from.
#include "tensor/memory_resource.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

#include "tensor/tensor.h"

namespace parallm {
namespace {

// Host bytes that claim to be on Device::CUDA, counting each call.
class FakeDeviceMemory final : public MemoryResource {
 public:
  Device device() const override { return Device::CUDA; }
  void* allocate(size_t bytes) override {
    ++allocations;
    return host_.allocate(bytes);
  }
  void release(void* ptr, size_t bytes) override {
    ++releases;
    host_.release(ptr, bytes);
  }
  void copy(void* dst, const void* src, size_t bytes) override {
    ++copies;
    host_.copy(dst, src, bytes);
  }
  void zero(void* ptr, size_t bytes) override {
    ++zeros;
    host_.zero(ptr, bytes);
  }
  int allocations = 0, releases = 0, copies = 0, zeros = 0;

 private:
  HostMemory host_;
};

TEST(HostMemory, AlignedZeroFilledAndNullForZeroBytes) {
  HostMemory m;
  EXPECT_EQ(m.device(), Device::CPU);
  EXPECT_EQ(m.allocate(0), nullptr);
  auto* p = static_cast<unsigned char*>(m.allocate(100));
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(p[i], 0);
  std::memset(p, 7, 100);
  m.zero(p + 10, 20);
  EXPECT_EQ(p[9], 7);
  EXPECT_EQ(p[10], 0);
  EXPECT_EQ(p[29], 0);
  EXPECT_EQ(p[30], 7);
  m.release(p, 100);
}

// Large released blocks come back, zeroed, for the same size; held + live
// bytes stay within the peak of live bytes; small blocks are not held.
TEST(HostMemory, ReusesLargeBlocksWithinThePeakOfLiveBytes) {
  HostMemory m;
  const size_t big = HostMemory::kHeldMinBytes, small = 1000;
  auto* a = static_cast<unsigned char*>(m.allocate(big));
  ASSERT_NE(a, nullptr);
  std::memset(a, 9, big);
  m.release(a, big);
  EXPECT_EQ(m.held_bytes(), big);
  auto* again = static_cast<unsigned char*>(m.allocate(big));
  EXPECT_EQ(again, a);  // the held block, not a fresh one
  EXPECT_EQ(m.held_bytes(), 0u);
  bool zeroed = true;
  for (size_t i = 0; i < big; ++i) zeroed = zeroed && again[i] == 0;
  EXPECT_TRUE(zeroed);
  // A miss frees held blocks until held + live fit the peak: here all of them.
  m.release(again, big);
  void* b = m.allocate(2 * big);  // live 2 x big = the peak, so the held big goes
  EXPECT_EQ(m.held_bytes(), 0u);
  m.release(b, 2 * big);

  // Oldest first, and only as many as the bound needs: peak 3 x big.
  HostMemory n;
  void* x = n.allocate(2 * big);
  void* y = n.allocate(big);
  n.release(x, 2 * big);
  n.release(y, big);
  EXPECT_EQ(n.held_bytes(), 3 * big);
  void* z = n.allocate(big + 64);  // no block of that size: x (the oldest) goes, y stays
  EXPECT_EQ(n.held_bytes(), big);
  EXPECT_EQ(n.allocate(big), y);
  n.release(y, big);
  n.release(z, big + 64);
  void* w = n.allocate(small);  // small blocks are never held
  n.release(w, small);
  EXPECT_EQ(n.held_bytes(), 2 * big + 64);
}

TEST(Allocator, DefaultIsHostMemoryWithUnchangedStats) {
  Allocator a;
  EXPECT_EQ(a.device(), Device::CPU);
  {
    Tensor t = Tensor::zeros(a, {3, 5}, DType::F32, MemTag::Gradient);
    Tensor e = Tensor::zeros(a, {0}, DType::F32, MemTag::Gradient);  // 0 bytes is fine
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw()) % 64, 0u);
    EXPECT_EQ(a.current(MemTag::Gradient), 60);  // requested bytes, not the rounded 64
    for (int i = 0; i < 15; ++i) EXPECT_EQ(t.data<float>()[i], 0.f);
  }
  EXPECT_EQ(a.current(MemTag::Gradient), 0);
  EXPECT_EQ(a.peak(MemTag::Gradient), 60);
}

TEST(Allocator, RefusesATensorOfAnotherDevice) {
  Allocator host;
  EXPECT_THROW(Tensor::zeros(host, {4}, DType::F32, MemTag::Workspace, Device::CUDA), Error);
  FakeDeviceMemory mem;
  Allocator dev(mem);
  EXPECT_THROW(Tensor::zeros(dev, {4}, DType::F32, MemTag::Workspace, Device::CPU), Error);
  EXPECT_EQ(mem.allocations, 0);
  // Without a device named, a tensor is on its allocator's device.
  EXPECT_EQ(Tensor::zeros(dev, {4}, DType::F32, MemTag::Workspace).device(), Device::CUDA);
  EXPECT_EQ(mem.allocations, 1);
}

TEST(Allocator, ResourceServesStorageZeroAndCopies) {
  FakeDeviceMemory mem;
  Allocator dev(mem);
  Allocator host;
  EXPECT_EQ(dev.device(), Device::CUDA);
  {
    Tensor d = Tensor::zeros(dev, {2, 4}, DType::F32, MemTag::Activation, Device::CUDA);
    EXPECT_EQ(d.device(), Device::CUDA);
    EXPECT_EQ(mem.allocations, 1);
    EXPECT_EQ(dev.current(MemTag::Activation), 32);
    EXPECT_EQ(host.current(MemTag::Activation), 0);

    Tensor h = Tensor::zeros(host, {8}, DType::F32, MemTag::Activation);
    for (int i = 0; i < 8; ++i) h.data<float>()[i] = static_cast<float>(i + 1);
    d.copy_from(h);  // host -> device: the device side's resource copies
    EXPECT_EQ(mem.copies, 1);
    Tensor back = Tensor::zeros(host, {2, 4}, DType::F32, MemTag::Activation);
    back.copy_from(d);  // device -> host
    EXPECT_EQ(mem.copies, 2);
    for (int i = 0; i < 8; ++i) EXPECT_EQ(back.data<float>()[i], static_cast<float>(i + 1));

    d.narrow0(1, 1).zero_();
    EXPECT_EQ(mem.zeros, 1);
    back.copy_from(d);
    for (int i = 0; i < 8; ++i) EXPECT_EQ(back.data<float>()[i], i < 4 ? i + 1.f : 0.f);

    h.copy_from(back);  // host <-> host never reaches the resource
    h.zero_();
    EXPECT_EQ(mem.copies, 3);
    EXPECT_EQ(mem.zeros, 1);
  }
  EXPECT_EQ(mem.releases, 1);
  EXPECT_EQ(dev.current(MemTag::Activation), 0);
  EXPECT_EQ(dev.peak(MemTag::Activation), 32);
}

}  // namespace
}  // namespace parallm
