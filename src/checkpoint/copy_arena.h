// CopyArena: one block of host memory for a save's copies of the state (an
// asynchronous save writes from them while training changes the values).
// Mapped anonymously and advised to use huge pages before its first touch,
// so that the first copy of GPT-2 124M's 1.5 GB faults in some 750 pages of
// 2 MiB, not 390,000 of 4 KiB (under a hypervisor each fault is a VM exit:
// the difference is seconds of a step). Kept between saves: the pieces are
// the same every time.
#pragma once
#include <cstddef>

namespace parallm {

class CopyArena {
 public:
  CopyArena() = default;
  ~CopyArena();
  CopyArena(CopyArena&& o) noexcept;
  CopyArena& operator=(CopyArena&& o) noexcept;
  CopyArena(const CopyArena&) = delete;
  CopyArena& operator=(const CopyArena&) = delete;

  // Room for `floats` values (the contents are not kept when it grows).
  float* reserve(size_t floats);
  // Reserves and touches every page now, so that the first copy into it runs
  // at memory speed (on a thread of its own before the first save).
  void prefault(size_t floats);
  float* data() const { return data_; }

 private:
  float* data_ = nullptr;
  size_t bytes_ = 0;
  void release();
};

}  // namespace parallm
