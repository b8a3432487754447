// Staging for reductions MPI cannot do natively: bf16/f16 are widened to an
// fp32 scratch buffer, reduced there (so accumulation is fp32) and narrowed
// back; avg is a sum followed by a division by the group size (integers
// truncate toward zero, as C and NCCL's integer avg do). Scratch memory comes
// from the Allocator under MemTag::Communication when one is given.
#pragma once
#include <cstddef>

#include "tensor/dtype.h"

namespace parallm {
class Allocator;
}

namespace parallm::comm {

class StagingBuffer {
 public:
  StagingBuffer() = default;
  StagingBuffer(Allocator* alloc, size_t bytes);
  ~StagingBuffer();
  StagingBuffer(StagingBuffer&& o) noexcept;
  StagingBuffer& operator=(StagingBuffer&& o) noexcept;
  StagingBuffer(const StagingBuffer&) = delete;
  StagingBuffer& operator=(const StagingBuffer&) = delete;
  float* f32() const { return static_cast<float*>(ptr_); }
  void* data() const { return ptr_; }
  size_t bytes() const { return bytes_; }

 private:
  void reset() noexcept;
  Allocator* alloc_ = nullptr;
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

// True for dtypes that are reduced through an fp32 copy (BF16, F16).
bool reduces_via_f32(DType t);
void widen_to_f32(const void* src, DType t, float* dst, size_t n);
// dst[i] = narrow(src[i] / divisor); divisor 1 means a plain conversion.
void narrow_from_f32(const float* src, void* dst, DType t, size_t n, int divisor = 1);
// buf[i] /= divisor for F32, F64, I32, I64 (avg after a sum).
void divide_in_place(void* buf, DType t, size_t n, int divisor);

}  // namespace parallm::comm
