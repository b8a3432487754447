// JobDevice: where a job's model lives (train, generate, serve): the
// memory its tensors come from, whose allocator finds the device's stream
// (ops/stream.h), and the world its device buffers travel through. The
// host and the test device are HostJobDevice (below): the test device's
// groups stage its buffers through host buffers (comm::TestDeviceStaging),
// as MPI without NCCL does for a GPU. A GPU is device/cuda's CudaJobDevice
// (its memory, stream and kernels, and an NCCL world); open_job_device
// (device/cuda/open_job_device.h) picks one by --device. The jobs never
// name a backend: they see only this.
#pragma once
#include <optional>
#include <string>

#include "comm/communicator.h"
#include "comm/test_device_staging.h"
#include "tensor/memory_resource.h"
#include "tensor/test_device_memory.h"

namespace parallm {

class JobDevice {
 public:
  virtual ~JobDevice() = default;
  virtual Device kind() const = 0;
  virtual MemoryResource& memory() = 0;
  // The job's ranks as the device's buffers reach them (null: one process).
  virtual comm::Communicator* world() const = 0;
  // For the banner and MFU: the card's name ("" on the host) and its
  // datasheet peak in FLOP/s (0: none known).
  virtual std::string name() const { return ""; }
  virtual double peak_flops() const { return 0.0; }
};

class HostJobDevice final : public JobDevice {
 public:
  // d: Device::CPU or Device::Test; world: the job's ranks (null: one process).
  HostJobDevice(Device d, comm::Communicator* world);
  HostJobDevice(const HostJobDevice&) = delete;
  HostJobDevice& operator=(const HostJobDevice&) = delete;

  Device kind() const override { return test_ ? Device::Test : Device::CPU; }
  MemoryResource& memory() override {
    return test_ ? static_cast<MemoryResource&>(*test_) : host_;
  }
  comm::Communicator* world() const override { return world_; }

 private:
  HostMemory host_;
  std::optional<TestDeviceMemory> test_;
  std::optional<comm::TestDeviceStaging> staged_;
  comm::Communicator* world_;
};

}  // namespace parallm
