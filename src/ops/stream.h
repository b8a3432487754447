// Stream: where an op runs. Every op of src/ops takes one first: the device
// its operands live on and, on a GPU, the queue the kernel is put on. The
// host stream (Device::CPU) runs the CPU kernels synchronously; the test
// device stream (Device::Test, tensor/test_device_memory.h) runs the same
// kernels on the host addresses behind its operands, so a model run there
// gives the CPU's bits while any host access to its memory above the ops
// faults. Invariant: only the op implementations call operand(), and they
// call it on every pointer they hand a kernel. A GPU's stream carries the
// DeviceBackend its ops go to (device_backend.h); it is made, with the
// memory it serves, by the job that owns the GPU (DeviceMemory below).
#pragma once
#include "tensor/allocator.h"
#include "tensor/dtype.h"
#include "tensor/tensor.h"
#include "tensor/test_device_memory.h"

namespace parallm::ops {

class DeviceBackend;

class Stream {
 public:
  // The synchronous host stream and the test device's stream; both stateless.
  static const Stream& host();
  static const Stream& test_device();
  // The stream of a device with no state of its own (CPU or Test); a CUDA
  // stream is made by the job that owns its device.
  static const Stream& of(Device d);
  // The stream of an allocator's memory: of(device) on the CPU and the test
  // device, the GPU's own stream for a DeviceMemory.
  static const Stream& of(const Allocator& a) { return of(a.resource()); }
  static const Stream& of(const MemoryResource& m);
  static const Stream& of(const Tensor& t);  // its allocator's (the host's when empty)
  // A stream whose ops go to `backend` (a GPU's queue), which outlives it.
  Stream(Device d, const DeviceBackend& backend) : device_(d), backend_(&backend) {}
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  Device device() const { return device_; }
  // The backend of a device with kernels of its own (null on CPU and Test).
  const DeviceBackend* backend() const { return backend_; }

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
  const DeviceBackend* backend_ = nullptr;
};

// The memory of a device that has its own stream (a GPU): an allocator over
// it finds the stream its ops run on (Stream::of(const Allocator&)), so the
// model, its parameters and its optimizer need nothing but the allocator.
class DeviceMemory : public MemoryResource {
 public:
  virtual const Stream& stream() const = 0;
};

// Fails, naming the op and the device, where an op has no kernel for the
// stream's device yet: every op runs on CPU and Test, and those a
// DeviceBackend lacks are refused on its device.
void require_cpu_kernels(const Stream& s, const char* op);

}  // namespace parallm::ops
