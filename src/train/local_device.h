// LocalDevice: the memory and the world of a job whose model lives on the
// host (--device cpu) or on the test device (--device test,
// docs/devices.md): the test device's groups stage its buffers through host
// buffers (comm::TestDeviceStaging), as MPI without NCCL does for a GPU. A
// GPU brings its own memory and NCCL world (train/cuda).
#pragma once
#include <optional>

#include "comm/communicator.h"
#include "comm/test_device_staging.h"
#include "tensor/memory_resource.h"
#include "tensor/test_device_memory.h"

namespace parallm {

class LocalDevice {
 public:
  // d: Device::CPU or Device::Test; world: the job's ranks (null: one process).
  LocalDevice(Device d, comm::Communicator* world);
  LocalDevice(const LocalDevice&) = delete;
  LocalDevice& operator=(const LocalDevice&) = delete;

  MemoryResource& memory() { return test_ ? static_cast<MemoryResource&>(*test_) : host_; }
  // The world device buffers travel through (null: one process).
  comm::Communicator* world() const { return world_; }

 private:
  HostMemory host_;
  std::optional<TestDeviceMemory> test_;
  std::optional<comm::TestDeviceStaging> staged_;
  comm::Communicator* world_;
};

}  // namespace parallm
