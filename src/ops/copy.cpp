#include "ops/copy.h"

#include <algorithm>
#include <cstring>

#include "ops/device_backend.h"

namespace parallm::ops {

void copy_to_device(const Stream& s, void* dst, const void* host_src, size_t bytes) {
  if (const DeviceBackend* b = s.backend()) return b->copy_to_device(dst, host_src, bytes);
  require_cpu_kernels(s, "copy_to_device");
  PX_CHECK(!is_test_device_address(host_src), "copy_to_device: the source {} is not host memory",
           host_src);
  if (bytes != 0) std::memmove(s.operand(dst), host_src, bytes);
}

void copy_to_host(const Stream& s, void* host_dst, const void* src, size_t bytes) {
  if (const DeviceBackend* b = s.backend()) return b->copy_to_host(host_dst, src, bytes);
  require_cpu_kernels(s, "copy_to_host");
  PX_CHECK(!is_test_device_address(host_dst), "copy_to_host: the destination {} is not host memory",
           host_dst);
  if (bytes != 0) std::memmove(host_dst, s.operand(src), bytes);
}

void copy(const Stream& s, void* dst, const void* src, size_t bytes) {
  if (const DeviceBackend* b = s.backend()) return b->copy(dst, src, bytes);
  require_cpu_kernels(s, "copy");
  if (bytes != 0) std::memmove(s.operand(dst), s.operand(src), bytes);
}

void fill(const Stream& s, float* dst, int64_t n, float value) {
  if (const DeviceBackend* b = s.backend()) return b->fill(dst, n, value);
  require_cpu_kernels(s, "fill");
  if (n > 0) std::fill_n(s.operand(dst), n, value);
}

void zero(const Stream& s, void* dst, size_t bytes) {
  if (const DeviceBackend* b = s.backend()) return b->zero(dst, bytes);
  require_cpu_kernels(s, "zero");
  if (bytes != 0) std::memset(s.operand(dst), 0, bytes);
}

void synchronize(const Stream& s) {
  if (const DeviceBackend* b = s.backend()) b->synchronize();
}

}  // namespace parallm::ops
