// bf16 flash attention on tensor cores (mma.sync m16n8k16, fp32 accumulate),
// D in {64, 128}, no document mask (attention.cpp checks). Each warp owns
// MT 16-row m-tiles of its block's tile; with MT = 2 (forward; dq and dk/dv
// at D = 64) every fragment loaded from shared memory feeds two mmas.
// Forward: per query tile, loop over 64-key tiles with an online softmax in
// registers (log2 domain). Backward, two deterministic kernels: dk/dv per key
// block (looping over the group's query heads and query tiles), dq per query
// tile (looping over key tiles); each output row has one owner block, so no
// atomics. Streamed tiles are double-buffered with cp.async (the load of tile
// n + 1 overlaps the math on tile n; one __syncthreads per tile). Tiles live
// in shared memory row-major with a row stride of D + 8 bf16, so the 8 row
// addresses of every ldmatrix phase fall into distinct 16-byte bank groups.
// This header holds what the forward (attention_mma_forward.cu) and the
// backward (attention_mma_backward.cu) share: the PTX wrappers (mma,
// ldmatrix, cp.async), tiles, masking bounds and per-row statistics.
#pragma once
#include <cuda_bf16.h>

#include <climits>
#include <cmath>
#include <cstdint>

#include "kernels/cuda/attention_common.cuh"
#include "kernels/cuda/attention_launch.h"
#include "kernels/cuda/cuda_check.h"

namespace parallm::cuda::detail::mma {

using bf16 = __nv_bfloat16;
constexpr int kKeyTile = 64;  // K/V rows per streamed tile; keys per dk/dv block
// Blocks of 4 warps per SM every kernel is compiled for: caps registers at
// 255 per thread (ptxas -v, sm_90: 220-255, dk/dv D 64 spills 16 bytes).
constexpr int kMinBlocks = 2;
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

__device__ inline void mma16816(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Two floats as a bf16 pair, lo in the low half (the lower column index).
__device__ inline uint32_t pack(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&v);
}

__device__ inline uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// ldmatrix x4: lane l gives the address of row l % 8 of 8 x 8 matrix l / 8;
// r[i] gets matrix i's (row lane / 4, columns 2 (lane % 4) and +1), or with
// .trans its (rows 2 (lane % 4) and +1, column lane / 4).
__device__ inline void ldsm4(uint32_t r[4], const bf16* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_u32(p))
               : "memory");
}
__device__ inline void ldsm4_trans(uint32_t r[4], const bf16* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_u32(p))
               : "memory");
}

// 16 bytes global -> shared, asynchronously; zero-filled (nothing read) when
// !valid, in which case src only has to be some valid address.
__device__ inline void cp_async16(bf16* dst, const bf16* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_u32(dst)), "l"(src),
               "r"(valid ? 16 : 0)
               : "memory");
}
__device__ inline void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
__device__ inline void cp_async_wait_all() {
  asm volatile("cp.async.wait_group 0;\n" ::: "memory");
}

// A shared tile of rows x LD bf16, row-major. Fragment loads for
// mma.m16n8k16 (A: a[0..3] = rows g / g + 8 x columns 2t / 8 + 2t; B: b0 =
// k 2t, b1 = k 8 + 2t, both at n = g).
template <int LD>
struct Tile {
  const bf16* p;
  // The A fragment (16 x 16, row-major) at rows r0.., columns k0...
  __device__ void a_frag(uint32_t a[4], int r0, int k0, int lane) const {
    // matrices: (r0, k0), (r0 + 8, k0), (r0, k0 + 8), (r0 + 8, k0 + 8)
    ldsm4(a, p + (r0 + lane % 16) * LD + k0 + (lane / 16) * 8);
  }
  // B fragments for k-step k0.. of n-tiles n0.. and n0 + 8.. of a tile stored
  // [n][k] (b[0], b[1] for n0; b[2], b[3] for n0 + 8).
  __device__ void b_frags_nk(uint32_t b[4], int n0, int k0, int lane) const {
    // matrices: (n0, k0), (n0, k0 + 8), (n0 + 8, k0), (n0 + 8, k0 + 8)
    ldsm4(b, p + (n0 + lane % 8 + (lane / 16) * 8) * LD + k0 + ((lane / 8) % 2) * 8);
  }
  // The same for a tile stored [k][n].
  __device__ void b_frags_kn(uint32_t b[4], int k0, int n0, int lane) const {
    // transposed matrices: (k0, n0), (k0 + 8, n0), (k0, n0 + 8), (k0 + 8, n0 + 8)
    ldsm4_trans(b, p + (k0 + lane % 16) * LD + n0 + (lane / 16) * 8);
  }
};

// The 16 x 16 A fragment of key/query columns 16kk.. from two 16 x 8
// accumulator fragments (the C layout of n-tiles 2kk and 2kk+1).
__device__ inline void c_to_a(uint32_t a[4], const float c0[4], const float c1[4]) {
  a[0] = pack(c0[0], c0[1]);
  a[1] = pack(c0[2], c0[3]);
  a[2] = pack(c1[0], c1[1]);
  a[3] = pack(c1[2], c1[3]);
}

// Starts the copy of tile rows [0, rows) <- global rows row0 + r (zero at or
// past limit); a global row r starts at base + r * ld. Called by all NT
// threads of the block; the caller commits and waits.
template <int D, int LD, int NT>
__device__ void load_tile_async(bf16* tile, int rows, const bf16* base, int64_t ld, int64_t row0,
                                int64_t limit) {
  constexpr int kChunks = D / 8;  // 16-byte chunks per row
  for (int idx = threadIdx.x; idx < rows * kChunks; idx += NT) {
    const int r = idx / kChunks, c = (idx % kChunks) * 8;
    const bool ok = row0 + r < limit;
    cp_async16(tile + r * LD + c, ok ? base + (row0 + r) * ld + c : base, ok);
  }
}

// Query row i sees key j iff j < Tk and (causal) k_pos0 + j <= q_pos0 + i,
// i.e. iff j <= last_key(i), or iff i >= first_query(j). Both fit an int
// since positions stay below 2^31 (attention.cpp checks).
__device__ inline int last_key(const cpu::AttnDims& d, int64_t i) {
  int64_t e = d.Tk - 1;
  if (d.causal) {
    const int64_t c = d.q_pos0 + i - d.k_pos0;
    e = c < e ? c : e;
  }
  return static_cast<int>(e < -1 ? -1 : e);
}
__device__ inline int first_query(const cpu::AttnDims& d, int64_t j) {
  if (j >= d.Tk) return INT_MAX;
  const int64_t f = d.causal ? d.k_pos0 + j - d.q_pos0 : 0;
  return static_cast<int>(f < 0 ? 0 : (f > INT_MAX ? INT_MAX : f));
}

// Whether any (query in [i0, ..), key in [j0, j0 + nj)) pair is masked.
__device__ inline bool block_needs_mask(const cpu::AttnDims& d, int64_t i0, int64_t j0, int nj) {
  return j0 + nj > d.Tk || (d.causal && d.k_pos0 + j0 + nj - 1 > d.q_pos0 + i0);
}

// Whether every (query in [.., i_last], key in [j0, ..)) pair is masked.
__device__ inline bool block_all_masked(const cpu::AttnDims& d, int64_t i_last, int64_t j0) {
  return d.causal && d.k_pos0 + j0 > d.q_pos0 + i_last;
}

// Forward shape per head dim: warps per block and 16-row m-tiles per warp.

// Adds acc * f to the bf16 pair at p (p 4-byte aligned).
__device__ inline void add_pair(bf16* p, float a0, float a1, float f) {
  const __nv_bfloat162 old = *reinterpret_cast<const __nv_bfloat162*>(p);
  *reinterpret_cast<uint32_t*>(p) =
      pack(__bfloat162float(old.x) + a0 * f, __bfloat162float(old.y) + a1 * f);
}

// lse (log2 domain) and delta of query row i of (b, h); a row past Tq or
// with no visible key gets lse +inf, so P = 0.
__device__ inline void row_stats(float& l2, float& dl, const float* lse, const float* delta,
                                 const cpu::AttnDims& d, int64_t b, int64_t h, int64_t i) {
  const float lv = i < d.Tq ? lse[(b * d.Hq + h) * d.Tq + i] : -INFINITY;
  l2 = lv == -INFINITY ? INFINITY : lv * kLog2e;
  dl = i < d.Tq ? delta[(b * d.Hq + h) * d.Tq + i] : 0.f;
}

}  // namespace parallm::cuda::detail::mma
