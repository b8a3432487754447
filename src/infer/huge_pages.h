// Transparent huge pages for memory that decode streams on every token (the
// weights). Decode reads each weight once per token, front to back: with
// 4 KiB pages that is a TLB miss every 4 KiB, each a page walk (two levels
// of tables under a hypervisor). Best effort: where the kernel cannot
// (before Linux 6.1, no THP, no free huge page) the memory stays as it is.
#pragma once
#include <cstddef>

namespace parallm {

// Backs the whole 2 MiB pages inside [p, p + bytes) with huge pages now,
// keeping their contents (MADV_COLLAPSE). Returns the bytes collapsed.
size_t collapse_to_huge_pages(const void* p, size_t bytes);

}  // namespace parallm
