// Shared pieces of the gpu tests (label gpu): a fixture that skips, saying so
// plainly, when no CUDA device is visible, and a device buffer that copies
// host vectors in and out. CPU kernels are the reference for every GPU one.
#pragma once
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <vector>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device.h"

namespace parallm::testing {

class GpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda::device_count() == 0)
      GTEST_SKIP() << "no CUDA device visible: this GPU test did not run";
    PX_CUDA(cudaSetDevice(0));
  }
};

// A device copy of a host vector; to_host() reads it back (synchronously).
template <class T>
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t n) : n_(n) {
    PX_CUDA(cudaMalloc(reinterpret_cast<void**>(&ptr_), bytes() ? bytes() : 1));
    PX_CUDA(cudaMemset(ptr_, 0, bytes() ? bytes() : 1));
  }
  explicit DeviceBuffer(const std::vector<T>& host) : DeviceBuffer(host.size()) {
    PX_CUDA(cudaMemcpy(ptr_, host.data(), bytes(), cudaMemcpyHostToDevice));
  }
  ~DeviceBuffer() { cudaFree(ptr_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  T* get() const { return ptr_; }
  size_t size() const { return n_; }
  std::vector<T> to_host() const {
    std::vector<T> h(n_);
    PX_CUDA(cudaDeviceSynchronize());
    PX_CUDA(cudaMemcpy(h.data(), ptr_, bytes(), cudaMemcpyDeviceToHost));
    return h;
  }

 private:
  size_t bytes() const { return n_ * sizeof(T); }
  T* ptr_ = nullptr;
  size_t n_;
};

}  // namespace parallm::testing
