#include "tensor/tensor.h"

#include <cstring>

namespace parallm {

int64_t numel_of(std::span<const int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

int64_t Shape::numel() const { return numel_of(dims_); }

std::string Shape::str() const { return fmt::format("({})", fmt::join(dims_, ", ")); }

Storage::Storage(Allocator& a, size_t b, MemTag t, Device dev)
    : alloc(&a), ptr(nullptr), bytes(b), tag(t), device(dev) {
  PX_CHECK(dev == a.device(), "a {} tensor cannot be allocated by a {} allocator", device_name(dev),
           device_name(a.device()));
  ptr = a.allocate(b, t);
}

Storage::~Storage() { alloc->release(ptr, bytes, tag); }

Tensor Tensor::zeros(Allocator& a, Shape shape, DType dt, MemTag tag, Device dev) {
  for (size_t i = 0; i < shape.rank(); ++i)
    PX_CHECK(shape[i] >= 0, "negative dimension in shape {}", shape.str());
  Tensor t;
  t.storage_ =
      std::make_shared<Storage>(a, static_cast<size_t>(shape.numel()) * dtype_size(dt), tag, dev);
  t.shape_ = std::move(shape);
  t.dtype_ = dt;
  return t;
}

Tensor Tensor::view(Shape s) const {
  PX_CHECK(s.numel() == numel(), "cannot view shape {} as {}", shape_.str(), s.str());
  Tensor t = *this;
  t.shape_ = std::move(s);
  return t;
}

Tensor Tensor::narrow0(int64_t begin, int64_t len) const {
  PX_CHECK(rank() >= 1 && begin >= 0 && len >= 0 && begin + len <= shape_[0],
           "narrow0 [{}, {}) out of range for shape {}", begin, begin + len, shape_.str());
  Tensor t = *this;
  int64_t row = numel() / (shape_[0] == 0 ? 1 : shape_[0]);
  t.offset_ += static_cast<size_t>(begin * row) * dtype_size(dtype_);
  t.shape_[0] = len;
  return t;
}

Tensor Tensor::flat_range(int64_t begin, int64_t len) const {
  PX_CHECK(begin >= 0 && len >= 0 && begin + len <= numel(),
           "flat_range [{}, {}) out of range for {} elements", begin, begin + len, numel());
  Tensor t = *this;
  t.offset_ += static_cast<size_t>(begin) * dtype_size(dtype_);
  t.shape_ = Shape{len};
  return t;
}

void Tensor::zero_() const {
  if (device() == Device::CPU)
    std::memset(raw(), 0, nbytes());  // the hot host path stays a plain memset
  else
    storage_->alloc->resource().zero(raw(), nbytes());
}

void Tensor::copy_from(const Tensor& src) const {
  PX_CHECK(src.numel() == numel() && src.dtype() == dtype_, "copy_from: {} {} into {} {}",
           src.shape().str(), dtype_name(src.dtype()), shape_.str(), dtype_name(dtype_));
  if (device() == Device::CPU && src.device() == Device::CPU) {
    std::memmove(raw(), src.raw(), nbytes());
    return;
  }
  // A device resource copies to and from host memory (and between devices), so
  // whichever side is on a device does the copy.
  MemoryResource& r =
      device() != Device::CPU ? storage_->alloc->resource() : src.storage_->alloc->resource();
  r.copy(raw(), src.raw(), nbytes());
}

}  // namespace parallm
