// Tensor: a contiguous, row-major view (shape, dtype, device) onto a shared,
// tagged Storage. Views (reshape, narrow along dim 0, flat ranges) share
// storage; the buffer is released to its Allocator when the last view dies.
// A tensor's device is its allocator's (checked); zero_ and copy_from work on
// any device, copy_from also between host and device, through the allocator's
// MemoryResource. data<T>() of a CUDA tensor is a device pointer.
// No autograd: layers own their forward/backward explicitly.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/error.h"
#include "tensor/allocator.h"
#include "tensor/dtype.h"

namespace parallm {

// Elements of a tensor with these dimensions (1 for none).
int64_t numel_of(std::span<const int64_t> dims);

class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<int64_t> dims) : dims_(dims) {}
  explicit Shape(std::vector<int64_t> dims) : dims_(std::move(dims)) {}
  size_t rank() const { return dims_.size(); }
  int64_t operator[](size_t i) const { return dims_[i]; }
  int64_t& operator[](size_t i) { return dims_[i]; }
  int64_t numel() const;
  const std::vector<int64_t>& dims() const { return dims_; }
  std::string str() const;  // "(2, 3, 4)"
  bool operator==(const Shape& o) const = default;

 private:
  std::vector<int64_t> dims_;
};

struct Storage {
  Storage(Allocator& a, size_t bytes, MemTag tag, Device dev);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  Allocator* alloc;
  void* ptr;
  size_t bytes;
  MemTag tag;
  Device device;
};

class Tensor {
 public:
  Tensor() = default;
  // Zero-filled new storage on the allocator's device (dev, when given, must be it).
  static Tensor zeros(Allocator& a, Shape shape, DType dt, MemTag tag) {
    return zeros(a, std::move(shape), dt, tag, a.device());
  }
  static Tensor zeros(Allocator& a, Shape shape, DType dt, MemTag tag, Device dev);

  bool defined() const { return storage_ != nullptr; }
  const Shape& shape() const { return shape_; }
  int64_t dim(size_t i) const { return shape_[i]; }
  size_t rank() const { return shape_.rank(); }
  int64_t numel() const { return shape_.numel(); }
  DType dtype() const { return dtype_; }
  Device device() const { return storage_ ? storage_->device : Device::CPU; }
  // The allocator of its storage (null for an empty tensor).
  Allocator* allocator() const { return storage_ ? storage_->alloc : nullptr; }
  MemTag tag() const { return storage_->tag; }
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype_); }

  void* raw() const { return static_cast<char*>(storage_->ptr) + offset_; }
  template <class T>
  T* data() const {
    PX_CHECK(dtype_ == dtype_of<T>(), "tensor dtype is {}, accessed as {}", dtype_name(dtype_),
             dtype_name(dtype_of<T>()));
    return static_cast<T*>(raw());
  }
  // For bf16/f16 storage, accessed as raw 16-bit words.
  uint16_t* half_bits() const {
    PX_CHECK(dtype_size(dtype_) == 2, "tensor dtype {} is not 16-bit", dtype_name(dtype_));
    return static_cast<uint16_t*>(raw());
  }

  Tensor view(Shape s) const;                           // same numel
  Tensor narrow0(int64_t begin, int64_t len) const;     // rows [begin, begin+len) of dim 0
  Tensor flat_range(int64_t begin, int64_t len) const;  // 1-D view of elements
  void zero_() const;
  void copy_from(const Tensor& src) const;  // same numel and dtype; any devices

 private:
  std::shared_ptr<Storage> storage_;
  size_t offset_ = 0;  // bytes
  Shape shape_;
  DType dtype_ = DType::F32;
};

}  // namespace parallm
