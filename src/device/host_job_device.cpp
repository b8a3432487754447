// HostJobDevice (job_device.h): the host's memory, or the test device's
// with its world staged through host buffers.
#include "base/error.h"
#include "device/job_device.h"

namespace parallm {

HostJobDevice::HostJobDevice(Device d, comm::Communicator* world) : world_(world) {
  PX_CHECK(d != Device::CUDA, "--device cuda: a GPU is opened by open_job_device (device/cuda)");
  if (d != Device::Test) return;
  test_.emplace();
  if (world != nullptr) world_ = &staged_.emplace(*world);
}

}  // namespace parallm
