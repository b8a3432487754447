// The test device's memory (tensor/test_device_memory.h): its addresses
// fault when host code reads or writes through them, views and offsets
// still work on them, and copies to and from the host are explicit.
#include "tensor/test_device_memory.h"

#include <gtest/gtest.h>

#include <csignal>
#include <vector>

#include "tensor/tensor.h"

namespace parallm {
namespace {

TEST(TestDeviceMemory, AddressesAreTaggedAndCopiesRoundTrip) {
  TestDeviceMemory mem;
  Allocator dev(mem);
  Allocator host;
  ASSERT_EQ(dev.device(), Device::Test);
  Tensor d = Tensor::zeros(dev, {4, 3}, DType::F32, MemTag::Activation, Device::Test);
  EXPECT_TRUE(is_test_device_address(d.raw()));
  EXPECT_TRUE(is_test_device_address(d.narrow0(2, 1).raw()));  // views stay on the device
  Tensor h = Tensor::zeros(host, {4, 3}, DType::F32, MemTag::Activation);
  for (int i = 0; i < 12; ++i) h.data<float>()[i] = static_cast<float>(i) + 0.5f;
  d.copy_from(h);  // host -> device
  Tensor back = Tensor::zeros(host, {3}, DType::F32, MemTag::Activation);
  back.copy_from(d.narrow0(1, 1));  // device -> host, one row
  EXPECT_EQ(std::vector<float>(back.data<float>(), back.data<float>() + 3),
            (std::vector<float>{3.5f, 4.5f, 5.5f}));
  Tensor d2 = Tensor::zeros(dev, {12}, DType::F32, MemTag::Activation, Device::Test);
  d2.copy_from(d);  // device -> device
  d.zero_();
  back.copy_from(d2.flat_range(9, 3));
  EXPECT_EQ(back.data<float>()[2], 11.5f);
  back.copy_from(d.flat_range(9, 3));
  EXPECT_EQ(back.data<float>()[2], 0.0f);
  EXPECT_EQ(dev.current(MemTag::Activation), 24 * 4);  // counted like any device's bytes
}

TEST(TestDeviceMemory, HostUntagsOnlyItsOwnAddresses) {
  TestDeviceMemory mem;
  Allocator dev(mem);
  Tensor d = Tensor::zeros(dev, {8}, DType::F32, MemTag::Workspace, Device::Test);
  float* host_view = test_device_host(d.data<float>());
  EXPECT_FALSE(is_test_device_address(host_view));
  EXPECT_EQ(host_view[7], 0.0f);  // the op side reads the host address
  float plain = 1.0f;
  EXPECT_THROW(test_device_host(&plain), Error);
  EXPECT_EQ(test_device_host(static_cast<float*>(nullptr)), nullptr);
}

using TestDeviceMemoryDeathTest = ::testing::Test;

TEST_F(TestDeviceMemoryDeathTest, HostReadOfDeviceMemoryFaults) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  TestDeviceMemory mem;
  Allocator dev(mem);
  Tensor d = Tensor::zeros(dev, {8}, DType::F32, MemTag::Activation, Device::Test);
  const volatile float* p = d.data<float>();
  EXPECT_EXIT({ [[maybe_unused]] float x = p[3]; }, ::testing::KilledBySignal(SIGSEGV), ".*");
  volatile float* w = d.data<float>();
  EXPECT_EXIT({ w[0] = 1.0f; }, ::testing::KilledBySignal(SIGSEGV), ".*");
}

}  // namespace
}  // namespace parallm
