#include "ops/stream.h"

namespace parallm::ops {

const Stream& Stream::host() {
  static const Stream s(Device::CPU);
  return s;
}

const Stream& Stream::test_device() {
  static const Stream s(Device::Test);
  return s;
}

const Stream& Stream::of(Device d) {
  PX_CHECK(d != Device::CUDA, "a CUDA stream belongs to the job that owns the GPU; none given");
  return d == Device::Test ? test_device() : host();
}

const Stream& Stream::of(const MemoryResource& m) {
  if (m.device() != Device::CUDA) return of(m.device());
  const auto* memory = dynamic_cast<const DeviceMemory*>(&m);
  PX_CHECK(memory != nullptr, "{} memory without a stream of its own", device_name(m.device()));
  return memory->stream();
}

const Stream& Stream::of(const Tensor& t) {
  return t.allocator() != nullptr ? of(*t.allocator()) : host();
}

void Stream::wrong_device(const void* p) const {
  throw Error(fmt::format("{} is test device memory, given to an op on the {} stream", p,
                          device_name(device_)));
}

void require_cpu_kernels(const Stream& s, const char* op) {
  PX_CHECK(s.device() != Device::CUDA, "op {} has no {} kernel yet", op, device_name(s.device()));
}

}  // namespace parallm::ops
