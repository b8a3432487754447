#include "checkpoint/copy_arena.h"

#include <sys/mman.h>

#include <cstring>
#include <utility>

#include "base/error.h"

namespace parallm {

CopyArena::~CopyArena() { release(); }

CopyArena::CopyArena(CopyArena&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}

CopyArena& CopyArena::operator=(CopyArena&& o) noexcept {
  if (this != &o) {
    release();
    data_ = std::exchange(o.data_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
  }
  return *this;
}

void CopyArena::release() {
  if (data_ != nullptr) ::munmap(data_, bytes_);
  data_ = nullptr;
  bytes_ = 0;
}

float* CopyArena::reserve(size_t floats) {
  const size_t want = floats * sizeof(float);
  if (want <= bytes_ && data_ != nullptr) return data_;
  release();
  if (want == 0) return nullptr;
  void* p = ::mmap(nullptr, want, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  PX_CHECK(p != MAP_FAILED, "checkpoint: cannot map {} bytes for the state's copy", want);
  (void)::madvise(p, want, MADV_HUGEPAGE);  // best effort: no THP, 4 KiB pages
  data_ = static_cast<float*>(p);
  bytes_ = want;
  return data_;
}

void CopyArena::prefault(size_t floats) {
  float* p = reserve(floats);
  if (p != nullptr) std::memset(p, 0, floats * sizeof(float));
}

}  // namespace parallm
