// 16-byte packs for the memory-bound kernels: a thread that moves one bf16 at
// a time keeps too few bytes in flight to reach HBM bandwidth, so the hot
// loops move Pack<T, W> (W consecutive elements) with one load or store.
// W = 1 is the scalar path; kPackWidth<T> fills 16 bytes. Invariant: a pack
// access needs its address aligned to the pack's size; callers check with
// is_aligned16 or start the packs at aligned_head elements into a row.
#pragma once
#include <cuda_bf16.h>

#include <cstdint>
#include <cstring>

namespace parallm::cuda {

template <class T>
inline constexpr int kPackWidth = 16 / static_cast<int>(sizeof(T));

template <class T, int W>
struct alignas(sizeof(T) * W) Pack {
  T v[W];
};

__host__ __device__ inline bool is_aligned16(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

// Elements before the first 16-byte boundary at or after p (p is aligned to
// sizeof(T), as every T* is), capped at n.
template <class T>
__device__ __forceinline__ int64_t aligned_head(const T* p, int64_t n) {
  const int64_t bytes = static_cast<int64_t>((16 - reinterpret_cast<uintptr_t>(p) % 16) % 16);
  const int64_t head = bytes / static_cast<int64_t>(sizeof(T));
  return head < n ? head : n;
}

template <class T, int W>
__device__ __forceinline__ Pack<T, W> load_pack(const T* p) {
  Pack<T, W> r;
  if constexpr (sizeof(T) * W == 16) {  // one 128-bit load whatever T is
    const uint4 bits = *reinterpret_cast<const uint4*>(p);
    memcpy(&r, &bits, sizeof(bits));
  } else {
#pragma unroll
    for (int k = 0; k < W; ++k) r.v[k] = p[k];
  }
  return r;
}

template <class T, int W>
__device__ __forceinline__ void store_pack(T* p, const Pack<T, W>& x) {
  if constexpr (sizeof(T) * W == 16) {
    uint4 bits;
    memcpy(&bits, &x, sizeof(bits));
    *reinterpret_cast<uint4*>(p) = bits;
  } else {
#pragma unroll
    for (int k = 0; k < W; ++k) p[k] = x.v[k];
  }
}

}  // namespace parallm::cuda
