// Small buffers that host code and ops share, on any stream. On the host
// stream they are the host memory itself, so nothing is copied or newly
// allocated; on a device the ops get a Workspace-tagged copy on the
// context's allocator and the copies between the two are explicit (what a
// GPU needs for token ids, positions, tables computed on the host, and the
// per-row statistics a loss sums on the host).
#pragma once
#include <cstdint>
#include <type_traits>
#include <vector>

#include "ops/copy.h"
#include "tensor/tensor.h"

namespace parallm {

// Host values an op reads: in place on the host, else uploaded once here.
template <class T>
class OnDevice {
 public:
  OnDevice(const ops::Stream& s, Allocator& a, const T* host, int64_t n) : ptr_(host) {
    if (s.device() == Device::CPU || host == nullptr) return;
    copy_ = Tensor::zeros(a, {n}, dtype_of<T>(), MemTag::Workspace);
    ops::copy_to_device(s, copy_.raw(), host, static_cast<size_t>(n) * sizeof(T));
    ptr_ = static_cast<const T*>(copy_.raw());
  }
  OnDevice(const ops::Stream& s, Allocator& a, const std::vector<T>& host)
      : OnDevice(s, a, host.data(), static_cast<int64_t>(host.size())) {}
  // On the host stream the op reads the values in place: they must outlive this.
  OnDevice(const ops::Stream&, Allocator&, std::vector<T>&&) = delete;
  const T* get() const { return ptr_; }

 private:
  const T* ptr_;
  Tensor copy_;
};

// n values that host code reads or writes (host()) and ops read or write
// (op()); to_host / to_device move the first k between the two sides.
template <class T>
class HostMirror {
 public:
  HostMirror(const ops::Stream& s, Allocator& a, int64_t n)
      : stream_(&s), host_(static_cast<size_t>(n)) {
    if (s.device() != Device::CPU) dev_ = Tensor::zeros(a, {n}, dtype_of<T>(), MemTag::Workspace);
  }
  T* host() { return host_.data(); }
  T* op() { return dev_.defined() ? static_cast<T*>(dev_.raw()) : host_.data(); }
  void to_host(int64_t k) {
    if (dev_.defined()) ops::copy_to_host(*stream_, host_.data(), dev_.raw(), bytes(k));
  }
  void to_device(int64_t k) {
    if (dev_.defined()) ops::copy_to_device(*stream_, dev_.raw(), host_.data(), bytes(k));
  }

 private:
  static size_t bytes(int64_t k) { return static_cast<size_t>(k) * sizeof(T); }
  const ops::Stream* stream_;
  std::vector<T> host_;
  Tensor dev_;
};

// n values of a buffer on stream s's device that host code reads or writes
// in place (file io, host code by nature): on the host stream the buffer
// itself; on a device a host copy of its values, copied back by
// write_back() (T const: read only).
template <class T>
class HostView {
 public:
  HostView(const ops::Stream& s, T* buffer, int64_t n)
      : stream_(&s), buffer_(buffer), ptr_(buffer) {
    if (s.device() == Device::CPU || n == 0) return;
    copy_.resize(static_cast<size_t>(n));
    ops::copy_to_host(s, copy_.data(), buffer, copy_.size() * sizeof(T));
    ptr_ = copy_.data();
  }
  T* get() const { return ptr_; }
  void write_back() const requires(!std::is_const_v<T>) {
    if (ptr_ != buffer_) ops::copy_to_device(*stream_, buffer_, ptr_, copy_.size() * sizeof(T));
  }

 private:
  const ops::Stream* stream_;
  T* buffer_;
  T* ptr_;
  std::vector<std::remove_const_t<T>> copy_;
};

// Scratch buffers of a stream's ops that host code once kept in plain
// vectors (context parallelism's chunk tiles, the ep dispatch's staging): on
// the host stream plain host memory outside the model's accounting, as those
// vectors were; on a device, buffers of its allocator. Tensors it hands out
// must not outlive it.
class OpScratch {
 public:
  OpScratch(const ops::Stream& s, Allocator& device)
      : use_(s.device() == Device::CPU ? &host_ : &device) {}
  OpScratch(const OpScratch&) = delete;
  OpScratch& operator=(const OpScratch&) = delete;
  Tensor floats(int64_t n) const {
    return Tensor::zeros(*use_, {n}, DType::F32, MemTag::Workspace);
  }

 private:
  Allocator host_;
  Allocator* use_;
};

}  // namespace parallm
