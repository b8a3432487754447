#include "train/local_device.h"

#include "base/error.h"

namespace parallm {

LocalDevice::LocalDevice(Device d, comm::Communicator* world) : world_(world) {
  PX_CHECK(d != Device::CUDA, "a CUDA job brings its own memory and world (train/cuda)");
  if (d != Device::Test) return;
  test_.emplace();
  if (world != nullptr) world_ = &staged_.emplace(*world);
}

}  // namespace parallm
