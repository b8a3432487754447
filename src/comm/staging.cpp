#include "comm/staging.h"

#include <cstdint>
#include <cstdlib>
#include <utility>

#include "base/error.h"
#include "tensor/allocator.h"
#include "tensor/half.h"

namespace parallm::comm {

StagingBuffer::StagingBuffer(Allocator* alloc, size_t bytes) : alloc_(alloc), bytes_(bytes) {
  if (bytes == 0) return;
  if (alloc != nullptr) {
    ptr_ = alloc->allocate(bytes, MemTag::Communication);
  } else {
    ptr_ = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
    PX_CHECK(ptr_ != nullptr, "out of memory allocating a {}-byte communication buffer", bytes);
  }
}

StagingBuffer::~StagingBuffer() { reset(); }

StagingBuffer::StagingBuffer(StagingBuffer&& o) noexcept
    : alloc_(o.alloc_), ptr_(std::exchange(o.ptr_, nullptr)), bytes_(o.bytes_) {}

StagingBuffer& StagingBuffer::operator=(StagingBuffer&& o) noexcept {
  if (this != &o) {
    reset();
    alloc_ = o.alloc_;
    ptr_ = std::exchange(o.ptr_, nullptr);
    bytes_ = o.bytes_;
  }
  return *this;
}

void StagingBuffer::reset() noexcept {
  if (ptr_ == nullptr) return;
  if (alloc_ != nullptr) {
    alloc_->release(ptr_, bytes_, MemTag::Communication);
  } else {
    std::free(ptr_);
  }
  ptr_ = nullptr;
}

bool reduces_via_f32(DType t) { return t == DType::BF16 || t == DType::F16; }

namespace {
// Large conversions are split over OpenMP threads; small ones stay serial.
constexpr size_t kParallelElems = size_t{1} << 18;
}  // namespace

void widen_to_f32(const void* src, DType t, float* dst, size_t n) {
  const auto* s = static_cast<const uint16_t*>(src);
  const auto m = static_cast<int64_t>(n);
  if (t == DType::BF16) {
#pragma omp parallel for if (n >= kParallelElems)
    for (int64_t i = 0; i < m; ++i) dst[i] = bf16_to_f32(s[i]);
  } else {
    PX_CHECK(t == DType::F16, "widen_to_f32: unsupported dtype {}", dtype_name(t));
#pragma omp parallel for if (n >= kParallelElems)
    for (int64_t i = 0; i < m; ++i) dst[i] = f16_to_f32(s[i]);
  }
}

void narrow_from_f32(const float* src, void* dst, DType t, size_t n, int divisor) {
  auto* d = static_cast<uint16_t*>(dst);
  const auto m = static_cast<int64_t>(n);
  const float div = static_cast<float>(divisor);
  const bool bf = t == DType::BF16;
  PX_CHECK(bf || t == DType::F16, "narrow_from_f32: unsupported dtype {}", dtype_name(t));
  if (divisor == 1) {
#pragma omp parallel for if (n >= kParallelElems)
    for (int64_t i = 0; i < m; ++i) d[i] = bf ? f32_to_bf16(src[i]) : f32_to_f16(src[i]);
  } else {
#pragma omp parallel for if (n >= kParallelElems)
    for (int64_t i = 0; i < m; ++i)
      d[i] = bf ? f32_to_bf16(src[i] / div) : f32_to_f16(src[i] / div);
  }
}

namespace {
template <class T>
void divide(void* buf, size_t n, int divisor) {
  T* p = static_cast<T*>(buf);
  const T div = static_cast<T>(divisor);
  const auto m = static_cast<int64_t>(n);
#pragma omp parallel for if (n >= kParallelElems)
  for (int64_t i = 0; i < m; ++i) p[i] = p[i] / div;
}
}  // namespace

void divide_in_place(void* buf, DType t, size_t n, int divisor) {
  if (divisor == 1) return;
  switch (t) {
    case DType::F32:
      return divide<float>(buf, n, divisor);
    case DType::F64:
      return divide<double>(buf, n, divisor);
    case DType::I32:
      return divide<int32_t>(buf, n, divisor);
    case DType::I64:
      return divide<int64_t>(buf, n, divisor);
    default:
      PX_FAIL("avg is not defined for dtype {}", dtype_name(t));
  }
}

}  // namespace parallm::comm
