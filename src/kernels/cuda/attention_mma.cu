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
#include <cuda_bf16.h>

#include <climits>
#include <cmath>
#include <cstdint>

#include "kernels/cuda/attention_common.cuh"
#include "kernels/cuda/attention_launch.h"
#include "kernels/cuda/cuda_check.h"

namespace parallm::cuda::detail {
namespace {

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
// Two m-tiles share every K/V fragment a warp loads from shared memory
// (half the ldmatrix traffic per mma). D = 64 keeps the Q fragments in
// registers (Q is staged through a K/V stage); D = 128 lacks the registers
// and reads them from a Q tile in shared memory.
template <int D>
struct FwdShape {
  static constexpr int kWarps = 4, kMt = 2;
  static constexpr int kRows = kWarps * kMt * 16;  // query rows per block
  static constexpr bool kQInRegs = D == 64;
};

template <int D>
constexpr size_t forward_smem_bytes() {
  // two stages of K and V, and the Q tile unless staged in them
  return (4 * kKeyTile + (FwdShape<D>::kQInRegs ? 0 : FwdShape<D>::kRows)) * (D + 8) * sizeof(bf16);
}

// One online-softmax step of one 16-row m-tile over a 64-key tile: s (raw
// Q K^T) becomes P (bf16-ready, log2 domain), m / l / o are rescaled.
template <int ND>
__device__ __forceinline__ void softmax_step(float s[8][4], float o[ND][4], float m[2], float l[2],
                                             bool need_mask, int jt, const int lastk[2],
                                             float scale_log2, int t) {
  float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
  for (int n = 0; n < 8; ++n) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      float x = s[n][e] * scale_log2;
      if (need_mask && jt + n * 8 + 2 * t + (e % 2) > lastk[e / 2]) x = -INFINITY;
      s[n][e] = x;
      mx[e / 2] = fmaxf(mx[e / 2], x);
    }
  }
  float alpha[2], muse[2], rs[2] = {0.f, 0.f};
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
    mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
    const float mn = fmaxf(m[r], mx[r]);
    muse[r] = mn == -INFINITY ? 0.f : mn;  // nothing visible yet: keep exp2 finite
    alpha[r] = exp2f(m[r] - muse[r]);
    m[r] = mn;
  }
#pragma unroll
  for (int n = 0; n < 8; ++n) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      s[n][e] = exp2f(s[n][e] - muse[e / 2]);
      rs[e / 2] += s[n][e];
    }
  }
#pragma unroll
  for (int r = 0; r < 2; ++r) l[r] = l[r] * alpha[r] + rs[r];
#pragma unroll
  for (int n = 0; n < ND; ++n) {
    o[n][0] *= alpha[0];
    o[n][1] *= alpha[0];
    o[n][2] *= alpha[1];
    o[n][3] *= alpha[1];
  }
}

template <int D>
__global__ void __launch_bounds__(FwdShape<D>::kWarps * 32, kMinBlocks)
    forward_mma_kernel(bf16* out, float* lse, const bf16* q, const bf16* k, const bf16* v,
                       cpu::AttnDims d, float scale_log2) {
  constexpr int NT = FwdShape<D>::kWarps * 32, MT = FwdShape<D>::kMt, QR = FwdShape<D>::kRows;
  constexpr int LD = D + 8, KD = D / 16, ND = D / 8;
  constexpr bool kQRegs = FwdShape<D>::kQInRegs;
  constexpr int kStage = 2 * kKeyTile * LD;  // K rows then V rows
  static_assert(!kQRegs || QR <= 2 * kKeyTile, "Q is staged in one K/V stage");
  extern __shared__ __align__(16) unsigned char smem[];
  bf16* stage = reinterpret_cast<bf16*>(smem);  // [2][K | V], then Q unless kQRegs
  bf16* qs_mem = stage + (kQRegs ? 1 : 2) * kStage;
  const Tile<LD> qs{qs_mem};
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  // Later query tiles see more keys: start them first.
  const int64_t i0 = (int64_t{gridDim.x} - 1 - blockIdx.x) * QR;
  const int64_t h = blockIdx.y, b = blockIdx.z, kvh = h / (d.Hq / d.Hkv);
  const int64_t ldq = d.Hq * d.D, ldk = d.Hkv * d.D;
  const bf16* qb = q + (b * d.Tq * d.Hq + h) * D;
  const bf16* kb = k + (b * d.Tk * d.Hkv + kvh) * D;
  const bf16* vb = v + (b * d.Tk * d.Hkv + kvh) * D;
  const int64_t i_last = (i0 + QR < d.Tq ? i0 + QR : d.Tq) - 1;
  const int64_t kend = visible_end(d, i_last);
  const int ntiles = static_cast<int>((kend + kKeyTile - 1) / kKeyTile);

  // Q into its tile or stage 1 (read into registers before key tile 1 lands
  // there), key tile 0 into stage 0.
  load_tile_async<D, LD, NT>(qs_mem, QR, qb, ldq, i0, d.Tq);
  if (ntiles > 0) {
    load_tile_async<D, LD, NT>(stage, kKeyTile, kb, ldk, 0, d.Tk);
    load_tile_async<D, LD, NT>(stage + kKeyTile * LD, kKeyTile, vb, ldk, 0, d.Tk);
  }
  cp_async_commit();
  cp_async_wait_all();
  __syncthreads();
  // This warp owns rows [w0, w0 + 16 MT): m-tile mt is rows w0 + 16 mt...
  const int wl = warp * 16 * MT;  // local first row
  const int64_t w0 = i0 + wl;
  uint32_t qa[MT][kQRegs ? KD : 1][4];
  if constexpr (kQRegs) {
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int kk = 0; kk < KD; ++kk) qs.a_frag(qa[mt][kk], wl + mt * 16, kk * 16, lane);
  }

  float o[MT][ND][4], m[MT][2], l[MT][2];
  int lastk[MT][2];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
    for (int n = 0; n < ND; ++n) o[mt][n][0] = o[mt][n][1] = o[mt][n][2] = o[mt][n][3] = 0.f;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      m[mt][r] = -INFINITY;
      l[mt][r] = 0.f;
      lastk[mt][r] = last_key(d, w0 + mt * 16 + r * 8 + g);
    }
  }
  for (int it = 0; it < ntiles; ++it) {
    const int64_t j0 = int64_t{it} * kKeyTile;
    // Tile it has landed, and every warp is done with stage (it + 1) % 2
    // (tile it - 1, or Q at it = 0).
    cp_async_wait_all();
    __syncthreads();
    if (it + 1 < ntiles) {
      bf16* nx = stage + ((it + 1) % 2) * kStage;
      load_tile_async<D, LD, NT>(nx, kKeyTile, kb, ldk, j0 + kKeyTile, d.Tk);
      load_tile_async<D, LD, NT>(nx + kKeyTile * LD, kKeyTile, vb, ldk, j0 + kKeyTile, d.Tk);
    }
    cp_async_commit();
    // A tile hidden from all rows of this warp leaves m, l and o as they are
    // (alpha = 1 and p = 0, or all still zero); rows past Tq are dropped.
    if (w0 >= d.Tq || block_all_masked(d, w0 + 16 * MT - 1, j0)) continue;
    const bf16* cur = stage + (it % 2) * kStage;
    const Tile<LD> ks{cur}, vs{cur + kKeyTile * LD};
    float s[MT][8][4];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int n = 0; n < 8; ++n) s[mt][n][0] = s[mt][n][1] = s[mt][n][2] = s[mt][n][3] = 0.f;
#pragma unroll
    for (int kk = 0; kk < KD; ++kk) {
      uint32_t qf[MT][4];
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        if constexpr (kQRegs) {
#pragma unroll
          for (int e = 0; e < 4; ++e) qf[mt][e] = qa[mt][kk][e];
        } else {
          qs.a_frag(qf[mt], wl + mt * 16, kk * 16, lane);
        }
      }
#pragma unroll
      for (int np = 0; np < 4; ++np) {
        uint32_t bk[4];
        ks.b_frags_nk(bk, np * 16, kk * 16, lane);
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          mma16816(s[mt][2 * np], qf[mt], bk[0], bk[1]);
          mma16816(s[mt][2 * np + 1], qf[mt], bk[2], bk[3]);
        }
      }
    }
    const int jt = static_cast<int>(j0);
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
      softmax_step<ND>(s[mt], o[mt], m[mt], l[mt], block_needs_mask(d, w0 + mt * 16, j0, kKeyTile),
                       jt, lastk[mt], scale_log2, t);
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
      uint32_t pa[MT][4];
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) c_to_a(pa[mt], s[mt][2 * kk], s[mt][2 * kk + 1]);
#pragma unroll
      for (int np = 0; np < ND / 2; ++np) {
        uint32_t bv[4];
        vs.b_frags_kn(bv, kk * 16, np * 16, lane);
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          mma16816(o[mt][2 * np], pa[mt], bv[0], bv[1]);
          mma16816(o[mt][2 * np + 1], pa[mt], bv[2], bv[3]);
        }
      }
    }
  }
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float lr = l[mt][r];
      lr += __shfl_xor_sync(0xffffffffu, lr, 1);
      lr += __shfl_xor_sync(0xffffffffu, lr, 2);
      const int64_t row = w0 + mt * 16 + r * 8 + g;
      if (row >= d.Tq) continue;
      const float inv = lr > 0.f ? 1.f / lr : 0.f;
      bf16* orow = out + (b * d.Tq + row) * ldq + h * D;
#pragma unroll
      for (int n = 0; n < ND; ++n)
        *reinterpret_cast<uint32_t*>(orow + n * 8 + 2 * t) =
            pack(o[mt][n][2 * r] * inv, o[mt][n][2 * r + 1] * inv);
      if (t == 0)
        lse[(b * d.Hq + h) * d.Tq + row] = lr > 0.f ? (m[mt][r] + log2f(lr)) * kLn2 : -INFINITY;
    }
  }
}

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

// dk/dv shape per head dim: warps, 16-key m-tiles per warp (sharing every
// Q/dO fragment), and query rows per streamed tile (QT = 32 keeps dk, dv,
// S^T and dP^T of all m-tiles within the register file).
template <int D>
struct DkvShape {
  static constexpr int kWarps = 4, kMt = D == 64 ? 2 : 1, kQt = 32;
  static constexpr int kKeys = kWarps * kMt * 16;  // keys per block
};

template <int D>
constexpr size_t dkv_smem_bytes() {
  // K, V, two stages of Q and dO, two stages of lse and delta
  return (2 * DkvShape<D>::kKeys + 4 * DkvShape<D>::kQt) * (D + 8) * sizeof(bf16) +
         4 * DkvShape<D>::kQt * sizeof(float);
}

// dk, dv of keys [j0, j0 + kKeys) of (b, kv head), from every query head of
// the group. Each warp holds S^T and dP^T for its 16 MT keys x QT queries.
// The (head, query tile) pairs are streamed in a fixed order, Q and dO
// through cp.async, lse and delta through registers (loaded before the math
// on the current tile, stored after it).
template <int D>
__global__ void __launch_bounds__(DkvShape<D>::kWarps * 32, kMinBlocks)
    backward_dkv_mma_kernel(bf16* dk, bf16* dv, const bf16* dout, const bf16* q, const bf16* k,
                            const bf16* v, const float* lse, const float* delta, cpu::AttnDims d,
                            float scale) {
  constexpr int NT = DkvShape<D>::kWarps * 32, MT = DkvShape<D>::kMt, QT = DkvShape<D>::kQt;
  constexpr int KB = DkvShape<D>::kKeys, LD = D + 8, KD = D / 16, ND = D / 8, NQ = QT / 8;
  static_assert(QT <= NT && QT % 16 == 0, "a thread per query row of a tile");
  constexpr int kStage = 2 * QT * LD;  // Q rows then dO rows
  extern __shared__ __align__(16) unsigned char smem[];
  bf16* ks_mem = reinterpret_cast<bf16*>(smem);
  bf16* vs_mem = ks_mem + KB * LD;
  bf16* stage = vs_mem + KB * LD;                             // [2][Q | dO]
  float* l2s = reinterpret_cast<float*>(stage + 2 * kStage);  // [2][QT]
  float* dls = l2s + 2 * QT;                                  // [2][QT]
  const Tile<LD> ks{ks_mem}, vs{vs_mem};
  const int tid = static_cast<int>(threadIdx.x);
  const int warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
  const int64_t j0 = int64_t{blockIdx.x} * KB, kvh = blockIdx.y, b = blockIdx.z;
  const int64_t group = d.Hq / d.Hkv, ldq = d.Hq * d.D, ldk = d.Hkv * d.D;
  const float scale_log2 = scale * kLog2e;
  const bf16* qh = q + b * d.Tq * d.Hq * D;  // (b, head 0, row 0); head h at + h * D
  const bf16* doh = dout + b * d.Tq * d.Hq * D;
  // Queries before i_lo see none of this block's keys (causal).
  int64_t i_lo = d.causal ? d.k_pos0 + j0 - d.q_pos0 : 0;
  i_lo = i_lo < 0 ? 0 : (i_lo / QT) * QT;
  const int64_t nqt = i_lo < d.Tq ? (d.Tq - i_lo + QT - 1) / QT : 0;  // query tiles per head
  const int64_t total = group * nqt;  // (head, query tile) steps, tiles innermost

  load_tile_async<D, LD, NT>(ks_mem, KB, k + (b * d.Tk * d.Hkv + kvh) * D, ldk, j0, d.Tk);
  load_tile_async<D, LD, NT>(vs_mem, KB, v + (b * d.Tk * d.Hkv + kvh) * D, ldk, j0, d.Tk);
  if (total > 0) {
    const int64_t h = kvh * group;
    load_tile_async<D, LD, NT>(stage, QT, qh + h * D, ldq, i_lo, d.Tq);
    load_tile_async<D, LD, NT>(stage + QT * LD, QT, doh + h * D, ldq, i_lo, d.Tq);
    if (tid < QT) row_stats(l2s[tid], dls[tid], lse, delta, d, b, h, i_lo + tid);
  }
  cp_async_commit();

  // This warp owns keys [kw0, kw0 + 16 MT): m-tile mt is keys kw0 + 16 mt...
  const int wl = warp * 16 * MT;  // local first key
  const int64_t kw0 = j0 + wl;
  float dka[MT][ND][4], dva[MT][ND][4];
  int firstq[MT][2];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
    for (int n = 0; n < ND; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) dka[mt][n][e] = dva[mt][n][e] = 0.f;
#pragma unroll
    for (int r = 0; r < 2; ++r) firstq[mt][r] = first_query(d, kw0 + mt * 16 + r * 8 + g);
  }
  int64_t h = kvh * group, i0 = i_lo;  // this step's query head and tile
  for (int64_t step = 0; step < total; ++step) {
    const int cur = static_cast<int>(step % 2), nxt = 1 - cur;
    int64_t hn = h, in = i0 + QT;  // the next step's
    if (in >= d.Tq) {
      in = i_lo;
      ++hn;
    }
    // Step `step` has landed (tiles and row stats), and every warp is done
    // with stage nxt (step - 1).
    cp_async_wait_all();
    __syncthreads();
    const bool pre = step + 1 < total;
    float l2n = 0.f, dln = 0.f;
    if (pre) {
      bf16* nx = stage + nxt * kStage;
      load_tile_async<D, LD, NT>(nx, QT, qh + hn * D, ldq, in, d.Tq);
      load_tile_async<D, LD, NT>(nx + QT * LD, QT, doh + hn * D, ldq, in, d.Tq);
      if (tid < QT) row_stats(l2n, dln, lse, delta, d, b, hn, in + tid);
    }
    cp_async_commit();
    // Skip the math when this warp's keys are all past Tk, or no query of
    // the tile sees any of them.
    if (kw0 < d.Tk && !block_all_masked(d, i0 + QT - 1, kw0)) {
      const Tile<LD> qs{stage + cur * kStage}, dos{stage + cur * kStage + QT * LD};
      const float* l2 = l2s + cur * QT;
      const float* dl = dls + cur * QT;
      float st[MT][NQ][4], dpt[MT][NQ][4];
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int n = 0; n < NQ; ++n)
#pragma unroll
          for (int e = 0; e < 4; ++e) st[mt][n][e] = dpt[mt][n][e] = 0.f;
#pragma unroll
      for (int kk = 0; kk < KD; ++kk) {
        uint32_t ka[MT][4], va[MT][4];
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          ks.a_frag(ka[mt], wl + mt * 16, kk * 16, lane);
          vs.a_frag(va[mt], wl + mt * 16, kk * 16, lane);
        }
#pragma unroll
        for (int np = 0; np < NQ / 2; ++np) {
          uint32_t bq[4], bd[4];
          qs.b_frags_nk(bq, np * 16, kk * 16, lane);
          dos.b_frags_nk(bd, np * 16, kk * 16, lane);
#pragma unroll
          for (int mt = 0; mt < MT; ++mt) {
            mma16816(st[mt][2 * np], ka[mt], bq[0], bq[1]);
            mma16816(st[mt][2 * np + 1], ka[mt], bq[2], bq[3]);
            mma16816(dpt[mt][2 * np], va[mt], bd[0], bd[1]);
            mma16816(dpt[mt][2 * np + 1], va[mt], bd[2], bd[3]);
          }
        }
      }
      // Element (key row e / 2 of m-tile mt, query column n * 8 + 2t + e % 2).
      const int it0 = static_cast<int>(i0);
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        const bool need_mask = block_needs_mask(d, i0, kw0 + mt * 16, 16);
#pragma unroll
        for (int n = 0; n < NQ; ++n) {
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int c = n * 8 + 2 * t + (e % 2);
            float p = exp2f(st[mt][n][e] * scale_log2 - l2[c]);
            if (need_mask && it0 + c < firstq[mt][e / 2]) p = 0.f;
            st[mt][n][e] = p;
            dpt[mt][n][e] = p * (dpt[mt][n][e] - dl[c]);
          }
        }
      }
#pragma unroll
      for (int kk = 0; kk < QT / 16; ++kk) {
        uint32_t pa[MT][4], dsa[MT][4];
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          c_to_a(pa[mt], st[mt][2 * kk], st[mt][2 * kk + 1]);
          c_to_a(dsa[mt], dpt[mt][2 * kk], dpt[mt][2 * kk + 1]);
        }
#pragma unroll
        for (int np = 0; np < ND / 2; ++np) {
          uint32_t bd[4], bq[4];
          dos.b_frags_kn(bd, kk * 16, np * 16, lane);
          qs.b_frags_kn(bq, kk * 16, np * 16, lane);
#pragma unroll
          for (int mt = 0; mt < MT; ++mt) {
            mma16816(dva[mt][2 * np], pa[mt], bd[0], bd[1]);
            mma16816(dva[mt][2 * np + 1], pa[mt], bd[2], bd[3]);
            mma16816(dka[mt][2 * np], dsa[mt], bq[0], bq[1]);
            mma16816(dka[mt][2 * np + 1], dsa[mt], bq[2], bq[3]);
          }
        }
      }
    }
    if (pre && tid < QT) {
      l2s[nxt * QT + tid] = l2n;
      dls[nxt * QT + tid] = dln;
    }
    h = hn;
    i0 = in;
  }
  cp_async_wait_all();  // with no step, K and V may still be in flight
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int64_t key = kw0 + mt * 16 + r * 8 + g;
      if (key >= d.Tk) continue;
      const int64_t off = (b * d.Tk + key) * ldk + kvh * D;
#pragma unroll
      for (int n = 0; n < ND; ++n) {
        add_pair(dv + off + n * 8 + 2 * t, dva[mt][n][2 * r], dva[mt][n][2 * r + 1], 1.f);
        add_pair(dk + off + n * 8 + 2 * t, dka[mt][n][2 * r], dka[mt][n][2 * r + 1], scale);
      }
    }
  }
}

// dq shape per head dim: warps, 16-row m-tiles per warp (sharing every K/V
// fragment), and keys per S / dP register block (32 for D = 64 keeps two
// m-tiles within the register file).
template <int D>
struct DqShape {
  static constexpr int kWarps = 4, kMt = D == 64 ? 2 : 1, kKeys = D == 64 ? 32 : 64;
  static constexpr int kRows = kWarps * kMt * 16;  // query rows per block
};

template <int D>
constexpr size_t dq_smem_bytes() {
  // Q, dO, two stages of K and V, lse and delta
  return (2 * DqShape<D>::kRows + 4 * kKeyTile) * (D + 8) * sizeof(bf16) +
         2 * DqShape<D>::kRows * sizeof(float);
}

// dq of query rows [i0, i0 + kRows) of (b, h), over all visible key tiles.
template <int D>
__global__ void __launch_bounds__(DqShape<D>::kWarps * 32, kMinBlocks)
    backward_dq_mma_kernel(bf16* dq, const bf16* dout, const bf16* q, const bf16* k, const bf16* v,
                           const float* lse, const float* delta, cpu::AttnDims d, float scale) {
  constexpr int NT = DqShape<D>::kWarps * 32, MT = DqShape<D>::kMt, QR = DqShape<D>::kRows;
  constexpr int KS = DqShape<D>::kKeys, NS = KS / 8, LD = D + 8, KD = D / 16, ND = D / 8;
  constexpr int kStage = 2 * kKeyTile * LD;  // K rows then V rows
  static_assert(kKeyTile % KS == 0, "key blocks split the key tile");
  extern __shared__ __align__(16) unsigned char smem[];
  bf16* qs_mem = reinterpret_cast<bf16*>(smem);
  bf16* dos_mem = qs_mem + QR * LD;
  bf16* stage = dos_mem + QR * LD;                           // [2][K | V]
  float* l2 = reinterpret_cast<float*>(stage + 2 * kStage);  // [QR]
  float* dl = l2 + QR;                                       // [QR]
  const Tile<LD> qs{qs_mem}, dos{dos_mem};
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int64_t i0 = (int64_t{gridDim.x} - 1 - blockIdx.x) * QR;
  const int64_t h = blockIdx.y, b = blockIdx.z, kvh = h / (d.Hq / d.Hkv);
  const int64_t ldq = d.Hq * d.D, ldk = d.Hkv * d.D;
  const float scale_log2 = scale * kLog2e;
  const bf16* kb = k + (b * d.Tk * d.Hkv + kvh) * D;
  const bf16* vb = v + (b * d.Tk * d.Hkv + kvh) * D;
  const int64_t i_last = (i0 + QR < d.Tq ? i0 + QR : d.Tq) - 1;
  const int64_t kend = visible_end(d, i_last);
  const int ntiles = static_cast<int>((kend + kKeyTile - 1) / kKeyTile);
  load_tile_async<D, LD, NT>(qs_mem, QR, q + (b * d.Tq * d.Hq + h) * D, ldq, i0, d.Tq);
  load_tile_async<D, LD, NT>(dos_mem, QR, dout + (b * d.Tq * d.Hq + h) * D, ldq, i0, d.Tq);
  if (ntiles > 0) {
    load_tile_async<D, LD, NT>(stage, kKeyTile, kb, ldk, 0, d.Tk);
    load_tile_async<D, LD, NT>(stage + kKeyTile * LD, kKeyTile, vb, ldk, 0, d.Tk);
  }
  cp_async_commit();
  for (int r = threadIdx.x; r < QR; r += NT) row_stats(l2[r], dl[r], lse, delta, d, b, h, i0 + r);
  cp_async_wait_all();
  __syncthreads();
  // This warp owns rows [w0, w0 + 16 MT): m-tile mt is rows w0 + 16 mt...
  const int wl = warp * 16 * MT;  // local first row
  const int64_t w0 = i0 + wl;
  float l2r[MT][2], dlr[MT][2], dqa[MT][ND][4];
  int lastk[MT][2];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int rl = wl + mt * 16 + r * 8 + g;
      l2r[mt][r] = l2[rl];
      dlr[mt][r] = dl[rl];
      lastk[mt][r] = last_key(d, i0 + rl);
    }
#pragma unroll
    for (int n = 0; n < ND; ++n)
      dqa[mt][n][0] = dqa[mt][n][1] = dqa[mt][n][2] = dqa[mt][n][3] = 0.f;
  }
  for (int it = 0; it < ntiles; ++it) {
    const int64_t j0 = int64_t{it} * kKeyTile;
    // Tile it has landed, and every warp is done with stage (it + 1) % 2.
    cp_async_wait_all();
    __syncthreads();
    if (it + 1 < ntiles) {
      bf16* nx = stage + ((it + 1) % 2) * kStage;
      load_tile_async<D, LD, NT>(nx, kKeyTile, kb, ldk, j0 + kKeyTile, d.Tk);
      load_tile_async<D, LD, NT>(nx + kKeyTile * LD, kKeyTile, vb, ldk, j0 + kKeyTile, d.Tk);
    }
    cp_async_commit();
    if (w0 >= d.Tq) continue;  // all rows of this warp are past Tq
    const bf16* cur = stage + (it % 2) * kStage;
    const Tile<LD> ks{cur}, vs{cur + kKeyTile * LD};
#pragma unroll 1
    for (int ko = 0; ko < kKeyTile; ko += KS) {
      const int64_t jb = j0 + ko;
      // P = 0 for all rows of this warp; later key blocks are hidden too.
      if (block_all_masked(d, w0 + 16 * MT - 1, jb)) break;
      float s[MT][NS][4], dp[MT][NS][4];
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int n = 0; n < NS; ++n)
#pragma unroll
          for (int e = 0; e < 4; ++e) s[mt][n][e] = dp[mt][n][e] = 0.f;
#pragma unroll
      for (int kk = 0; kk < KD; ++kk) {
        uint32_t qa[MT][4], doa[MT][4];
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          qs.a_frag(qa[mt], wl + mt * 16, kk * 16, lane);
          dos.a_frag(doa[mt], wl + mt * 16, kk * 16, lane);
        }
#pragma unroll
        for (int np = 0; np < NS / 2; ++np) {
          uint32_t bk[4], bv[4];
          ks.b_frags_nk(bk, ko + np * 16, kk * 16, lane);
          vs.b_frags_nk(bv, ko + np * 16, kk * 16, lane);
#pragma unroll
          for (int mt = 0; mt < MT; ++mt) {
            mma16816(s[mt][2 * np], qa[mt], bk[0], bk[1]);
            mma16816(s[mt][2 * np + 1], qa[mt], bk[2], bk[3]);
            mma16816(dp[mt][2 * np], doa[mt], bv[0], bv[1]);
            mma16816(dp[mt][2 * np + 1], doa[mt], bv[2], bv[3]);
          }
        }
      }
      const int jt = static_cast<int>(jb);
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        const bool need_mask = block_needs_mask(d, w0 + mt * 16, jb, KS);
#pragma unroll
        for (int n = 0; n < NS; ++n) {
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            float p = exp2f(s[mt][n][e] * scale_log2 - l2r[mt][e / 2]);
            if (need_mask && jt + n * 8 + 2 * t + (e % 2) > lastk[mt][e / 2]) p = 0.f;
            dp[mt][n][e] = p * (dp[mt][n][e] - dlr[mt][e / 2]);
          }
        }
      }
#pragma unroll
      for (int kk = 0; kk < KS / 16; ++kk) {
        uint32_t dsa[MT][4];
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) c_to_a(dsa[mt], dp[mt][2 * kk], dp[mt][2 * kk + 1]);
#pragma unroll
        for (int np = 0; np < ND / 2; ++np) {
          uint32_t bk[4];
          ks.b_frags_kn(bk, ko + kk * 16, np * 16, lane);
#pragma unroll
          for (int mt = 0; mt < MT; ++mt) {
            mma16816(dqa[mt][2 * np], dsa[mt], bk[0], bk[1]);
            mma16816(dqa[mt][2 * np + 1], dsa[mt], bk[2], bk[3]);
          }
        }
      }
    }
  }
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int64_t i = w0 + mt * 16 + r * 8 + g;
      if (i >= d.Tq) continue;
      bf16* row = dq + (b * d.Tq + i) * ldq + h * D;
#pragma unroll
      for (int n = 0; n < ND; ++n)
        add_pair(row + n * 8 + 2 * t, dqa[mt][n][2 * r], dqa[mt][n][2 * r + 1], scale);
    }
  }
}

template <int D>
void forward_mma(bf16* out, float* lse, const bf16* q, const bf16* k, const bf16* v,
                 const cpu::AttnDims& d, float scale, cudaStream_t s) {
  constexpr int QR = FwdShape<D>::kRows;
  constexpr size_t bytes = forward_smem_bytes<D>();
  PX_CUDA(cudaFuncSetAttribute(forward_mma_kernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               static_cast<int>(bytes)));
  const dim3 grid(static_cast<unsigned>((d.Tq + QR - 1) / QR), static_cast<unsigned>(d.Hq),
                  static_cast<unsigned>(d.B));
  forward_mma_kernel<D>
      <<<grid, FwdShape<D>::kWarps * 32, bytes, s>>>(out, lse, q, k, v, d, scale * kLog2e);
  PX_CUDA_LAUNCH("attention_forward_mma");
}

template <int D>
void backward_mma(bf16* dq, bf16* dk, bf16* dv, const bf16* dout, const bf16* q, const bf16* k,
                  const bf16* v, const float* lse, const float* delta, const cpu::AttnDims& d,
                  float scale, cudaStream_t s) {
  constexpr int QR = DqShape<D>::kRows, KB = DkvShape<D>::kKeys;
  constexpr size_t dkv_bytes = dkv_smem_bytes<D>(), dq_bytes = dq_smem_bytes<D>();
  PX_CUDA(cudaFuncSetAttribute(backward_dkv_mma_kernel<D>,
                               cudaFuncAttributeMaxDynamicSharedMemorySize,
                               static_cast<int>(dkv_bytes)));
  PX_CUDA(cudaFuncSetAttribute(backward_dq_mma_kernel<D>,
                               cudaFuncAttributeMaxDynamicSharedMemorySize,
                               static_cast<int>(dq_bytes)));
  const dim3 kgrid(static_cast<unsigned>((d.Tk + KB - 1) / KB), static_cast<unsigned>(d.Hkv),
                   static_cast<unsigned>(d.B));
  backward_dkv_mma_kernel<D><<<kgrid, DkvShape<D>::kWarps * 32, dkv_bytes, s>>>(
      dk, dv, dout, q, k, v, lse, delta, d, scale);
  PX_CUDA_LAUNCH("attention_backward_dkv_mma");
  const dim3 qgrid(static_cast<unsigned>((d.Tq + QR - 1) / QR), static_cast<unsigned>(d.Hq),
                   static_cast<unsigned>(d.B));
  backward_dq_mma_kernel<D>
      <<<qgrid, DqShape<D>::kWarps * 32, dq_bytes, s>>>(dq, dout, q, k, v, lse, delta, d, scale);
  PX_CUDA_LAUNCH("attention_backward_dq_mma");
}

}  // namespace

void attention_forward_mma(bf16* out, float* lse, const bf16* q, const bf16* k, const bf16* v,
                           const cpu::AttnDims& d, float scale, cudaStream_t s) {
  if (d.D == 64)
    forward_mma<64>(out, lse, q, k, v, d, scale, s);
  else
    forward_mma<128>(out, lse, q, k, v, d, scale, s);
}

void attention_backward_mma(bf16* dq, bf16* dk, bf16* dv, const bf16* dout, const bf16* q,
                            const bf16* k, const bf16* v, const float* lse, const float* delta,
                            const cpu::AttnDims& d, float scale, cudaStream_t s) {
  if (d.D == 64)
    backward_mma<64>(dq, dk, dv, dout, q, k, v, lse, delta, d, scale, s);
  else
    backward_mma<128>(dq, dk, dv, dout, q, k, v, lse, delta, d, scale, s);
}

}  // namespace parallm::cuda::detail
