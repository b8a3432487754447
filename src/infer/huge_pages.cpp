// collapse_to_huge_pages (see huge_pages.h).
#include "infer/huge_pages.h"

#include <cstdint>

#ifdef __linux__
#include <sys/mman.h>
#endif

namespace parallm {

size_t collapse_to_huge_pages(const void* p, size_t bytes) {
#ifdef __linux__
#ifndef MADV_COLLAPSE
  constexpr int MADV_COLLAPSE = 25;  // Linux 6.1; older C libraries lack the name
#endif
  constexpr uintptr_t kHuge = uintptr_t{2} << 20;
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(p) + kHuge - 1) & ~(kHuge - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + bytes) & ~(kHuge - 1);
  if (p == nullptr || end <= begin) return 0;
  // One huge page at a time, so one that fails (none free) leaves the rest.
  size_t done = 0;
  for (uintptr_t a = begin; a < end; a += kHuge)
    if (madvise(reinterpret_cast<void*>(a), kHuge, MADV_COLLAPSE) == 0) done += kHuge;
  return done;
#else
  (void)p;
  (void)bytes;
  return 0;
#endif
}

}  // namespace parallm
