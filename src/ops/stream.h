// Stream: where an op runs. Every op of src/ops takes one first: the device
// its operands live on and, on a GPU, the queue the kernel is put on. The
// host stream (Device::CPU) runs the CPU kernels synchronously; the test
// device stream (Device::Test, tensor/test_device_memory.h) runs the same
// kernels on the host addresses behind its operands, so a model run there
// gives the CPU's bits while any host access to its memory above the ops
// faults. Invariant: only the op implementations call operand(), and they
// call it on every pointer they hand a kernel.
#pragma once
#include "tensor/dtype.h"
#include "tensor/test_device_memory.h"

namespace parallm::ops {

class Stream {
 public:
  // The synchronous host stream and the test device's stream; both stateless.
  static const Stream& host();
  static const Stream& test_device();
  // The stream of a device with no state of its own (CPU or Test); a CUDA
  // stream is made by the job that owns its device.
  static const Stream& of(Device d);

  Device device() const { return device_; }

  // The address a kernel of this stream uses for operand p (null stays
  // null): the test device's host address, or p itself on the host. A
  // buffer of the wrong device is a clear error, not a fault inside a kernel.
  template <class T>
  T* operand(T* p) const {
    if (device_ == Device::Test) return test_device_host(p);
    if (is_test_device_address(p)) wrong_device(p);
    return p;
  }

 private:
  explicit Stream(Device d) : device_(d) {}
  [[noreturn]] void wrong_device(const void* p) const;
  Device device_;
};

// Fails, naming the op and the device, where an op has no kernel for the
// stream's device yet (every op runs on CPU and Test).
void require_cpu_kernels(const Stream& s, const char* op);

}  // namespace parallm::ops
