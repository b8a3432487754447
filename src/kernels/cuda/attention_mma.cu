// bf16 flash attention on tensor cores (mma.sync m16n8k16, fp32 accumulate),
// D in {64, 128}, no document mask (attention.cpp checks). Blocks of 4 warps;
// each warp owns 16 rows of a 64-row tile. Forward: per query tile, loop over
// key tiles with an online softmax in registers (log2 domain). Backward, two
// deterministic kernels: dk/dv per key tile (looping over the group's query
// heads and query tiles), dq per query tile (looping over key tiles); each
// output row has one owner block, so no atomics. Tiles live in shared memory
// row-major with a row stride of D + 8 bf16, which makes every fragment read
// (32-bit along a row, or two 16-bit down a column) bank-conflict free.
#include <cuda_bf16.h>

#include <cmath>
#include <cstdint>

#include "kernels/cuda/attention_common.cuh"
#include "kernels/cuda/attention_launch.h"
#include "kernels/cuda/cuda_check.h"

namespace parallm::cuda::detail {
namespace {

using bf16 = __nv_bfloat16;
constexpr int kThreads = 128;  // 4 warps
constexpr int kTile = 64;      // rows per block tile (queries fwd/dq, keys dk/dv)
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

// A shared tile of rows x LD bf16, row-major.
template <int LD>
struct Tile {
  bf16* p;
  // Elements (r, c) and (r, c + 1).
  __device__ uint32_t row_pair(int r, int c) const {
    return *reinterpret_cast<const uint32_t*>(p + r * LD + c);
  }
  // Elements (r, c) and (r + 1, c).
  __device__ uint32_t col_pair(int r, int c) const {
    const uint32_t lo = *reinterpret_cast<const uint16_t*>(p + r * LD + c);
    const uint32_t hi = *reinterpret_cast<const uint16_t*>(p + (r + 1) * LD + c);
    return lo | (hi << 16);
  }
  // The A fragment (16 x 16, row-major) at rows r0.., columns k0...
  __device__ void a_frag(uint32_t a[4], int r0, int k0, int g, int t) const {
    a[0] = row_pair(r0 + g, k0 + 2 * t);
    a[1] = row_pair(r0 + g + 8, k0 + 2 * t);
    a[2] = row_pair(r0 + g, k0 + 8 + 2 * t);
    a[3] = row_pair(r0 + g + 8, k0 + 8 + 2 * t);
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

// tile rows [0, rows) <- global rows row0 + r (zero at or past limit); a
// global row r starts at base + r * ld. Called by all threads of the block.
template <int D, int LD>
__device__ void load_tile(bf16* tile, int rows, const bf16* base, int64_t ld, int64_t row0,
                          int64_t limit) {
  constexpr int kChunks = D / 8;  // 16-byte chunks per row
  for (int idx = threadIdx.x; idx < rows * kChunks; idx += kThreads) {
    const int r = idx / kChunks, c = (idx % kChunks) * 8;
    uint4 val = make_uint4(0, 0, 0, 0);
    if (row0 + r < limit) val = *reinterpret_cast<const uint4*>(base + (row0 + r) * ld + c);
    *reinterpret_cast<uint4*>(tile + r * LD + c) = val;
  }
}

// Causal: query row i sees key j iff k_pos0 + j <= q_pos0 + i.
__device__ inline bool masked(const cpu::AttnDims& d, int64_t i, int64_t j) {
  return j >= d.Tk || (d.causal && d.k_pos0 + j > d.q_pos0 + i);
}

// Whether any (query in [i0, i0 + 64), key in [j0, j0 + nj)) pair is masked.
__device__ inline bool tile_needs_mask(const cpu::AttnDims& d, int64_t i0, int64_t j0, int nj) {
  return j0 + nj > d.Tk || (d.causal && d.k_pos0 + j0 + nj - 1 > d.q_pos0 + i0);
}

template <int D>
__global__ void __launch_bounds__(kThreads)
    forward_mma_kernel(bf16* out, float* lse, const bf16* q, const bf16* k, const bf16* v,
                       cpu::AttnDims d, float scale_log2) {
  constexpr int LD = D + 8, KD = D / 16, ND = D / 8;
  __shared__ alignas(16) bf16 ks_mem[kTile * LD];
  __shared__ alignas(16) bf16 vs_mem[kTile * LD];
  const Tile<LD> ks{ks_mem}, vs{vs_mem};
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  // Later query tiles see more keys: start them first.
  const int64_t i0 = (int64_t{gridDim.x} - 1 - blockIdx.x) * kTile;
  const int64_t h = blockIdx.y, b = blockIdx.z, kvh = h / (d.Hq / d.Hkv);
  const int64_t ldq = d.Hq * d.D, ldk = d.Hkv * d.D;
  const bf16* qb = q + (b * d.Tq * d.Hq + h) * D;
  const bf16* kb = k + (b * d.Tk * d.Hkv + kvh) * D;
  const bf16* vb = v + (b * d.Tk * d.Hkv + kvh) * D;

  // This warp's Q fragments, staged through the K buffer.
  load_tile<D, LD>(ks_mem, kTile, qb, ldq, i0, d.Tq);
  __syncthreads();
  uint32_t qa[KD][4];
#pragma unroll
  for (int kk = 0; kk < KD; ++kk) ks.a_frag(qa[kk], warp * 16, kk * 16, g, t);

  float o[ND][4], m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};
#pragma unroll
  for (int n = 0; n < ND; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.f;
  const int64_t i_last = (i0 + kTile < d.Tq ? i0 + kTile : d.Tq) - 1;
  const int64_t kend = visible_end(d, i_last);
  const int64_t row[2] = {i0 + warp * 16 + g, i0 + warp * 16 + g + 8};
  for (int64_t j0 = 0; j0 < kend; j0 += kTile) {
    __syncthreads();  // previous tile (or the Q staging) fully read
    load_tile<D, LD>(ks_mem, kTile, kb, ldk, j0, d.Tk);
    load_tile<D, LD>(vs_mem, kTile, vb, ldk, j0, d.Tk);
    __syncthreads();
    float s[8][4];
#pragma unroll
    for (int n = 0; n < 8; ++n) {
      s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.f;
#pragma unroll
      for (int kk = 0; kk < KD; ++kk)
        mma16816(s[n], qa[kk], ks.row_pair(n * 8 + g, kk * 16 + 2 * t),
                 ks.row_pair(n * 8 + g, kk * 16 + 8 + 2 * t));
    }
    const bool need_mask = tile_needs_mask(d, i0, j0, kTile);
    float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
    for (int n = 0; n < 8; ++n) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        float x = s[n][e] * scale_log2;
        if (need_mask && masked(d, row[e / 2], j0 + n * 8 + 2 * t + (e % 2))) x = -INFINITY;
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
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
      uint32_t pa[4];
      c_to_a(pa, s[2 * kk], s[2 * kk + 1]);
#pragma unroll
      for (int n = 0; n < ND; ++n)
        mma16816(o[n], pa, vs.col_pair(kk * 16 + 2 * t, n * 8 + g),
                 vs.col_pair(kk * 16 + 8 + 2 * t, n * 8 + g));
    }
  }
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    l[r] += __shfl_xor_sync(0xffffffffu, l[r], 1);
    l[r] += __shfl_xor_sync(0xffffffffu, l[r], 2);
    if (row[r] >= d.Tq) continue;
    const float inv = l[r] > 0.f ? 1.f / l[r] : 0.f;
    bf16* orow = out + (b * d.Tq + row[r]) * ldq + h * D;
#pragma unroll
    for (int n = 0; n < ND; ++n)
      *reinterpret_cast<uint32_t*>(orow + n * 8 + 2 * t) =
          pack(o[n][2 * r] * inv, o[n][2 * r + 1] * inv);
    if (t == 0)
      lse[(b * d.Hq + h) * d.Tq + row[r]] = l[r] > 0.f ? (m[r] + log2f(l[r])) * kLn2 : -INFINITY;
  }
}

// Adds acc * f to the bf16 pair at p (p 4-byte aligned).
__device__ inline void add_pair(bf16* p, float a0, float a1, float f) {
  const __nv_bfloat162 old = *reinterpret_cast<const __nv_bfloat162*>(p);
  *reinterpret_cast<uint32_t*>(p) =
      pack(__bfloat162float(old.x) + a0 * f, __bfloat162float(old.y) + a1 * f);
}

// lse (log2 domain) and delta of query rows [i0, i0 + n) of (b, h) into
// shared memory; rows past Tq or with no visible key get +inf, so P = 0.
__device__ inline void load_row_stats(float* l2, float* dl, const float* lse, const float* delta,
                                      const cpu::AttnDims& d, int64_t b, int64_t h, int64_t i0,
                                      int n) {
  for (int r = threadIdx.x; r < n; r += kThreads) {
    const int64_t i = i0 + r;
    const float lv = i < d.Tq ? lse[(b * d.Hq + h) * d.Tq + i] : -INFINITY;
    l2[r] = lv == -INFINITY ? INFINITY : lv * kLog2e;
    dl[r] = i < d.Tq ? delta[(b * d.Hq + h) * d.Tq + i] : 0.f;
  }
}

// dk, dv of keys [j0, j0 + 64) of (b, kv head), from every query head of the
// group. Each warp holds S^T and dP^T for its 16 keys x QT queries.
template <int D, int QT>
__global__ void __launch_bounds__(kThreads)
    backward_dkv_mma_kernel(bf16* dk, bf16* dv, const bf16* dout, const bf16* q, const bf16* k,
                            const bf16* v, const float* lse, const float* delta, cpu::AttnDims d,
                            float scale) {
  constexpr int LD = D + 8, KD = D / 16, ND = D / 8, NQ = QT / 8;
  extern __shared__ __align__(16) unsigned char smem[];
  bf16* ks_mem = reinterpret_cast<bf16*>(smem);
  bf16* vs_mem = ks_mem + kTile * LD;
  bf16* qs_mem = vs_mem + kTile * LD;
  bf16* dos_mem = qs_mem + QT * LD;
  float* l2 = reinterpret_cast<float*>(dos_mem + QT * LD);
  float* dl = l2 + QT;
  const Tile<LD> ks{ks_mem}, vs{vs_mem}, qs{qs_mem}, dos{dos_mem};
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int64_t j0 = int64_t{blockIdx.x} * kTile, kvh = blockIdx.y, b = blockIdx.z;
  const int64_t group = d.Hq / d.Hkv, ldq = d.Hq * d.D, ldk = d.Hkv * d.D;
  const float scale_log2 = scale * kLog2e;
  load_tile<D, LD>(ks_mem, kTile, k + (b * d.Tk * d.Hkv + kvh) * D, ldk, j0, d.Tk);
  load_tile<D, LD>(vs_mem, kTile, v + (b * d.Tk * d.Hkv + kvh) * D, ldk, j0, d.Tk);
  float dka[ND][4], dva[ND][4];
#pragma unroll
  for (int n = 0; n < ND; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) dka[n][e] = dva[n][e] = 0.f;
  const int64_t key[2] = {j0 + warp * 16 + g, j0 + warp * 16 + g + 8};
  // Queries before i_lo see none of this tile's keys (causal).
  int64_t i_lo = d.causal ? d.k_pos0 + j0 - d.q_pos0 : 0;
  i_lo = i_lo < 0 ? 0 : (i_lo / QT) * QT;
  for (int64_t h = kvh * group; h < (kvh + 1) * group; ++h) {
    const bf16* qb = q + (b * d.Tq * d.Hq + h) * D;
    const bf16* dob = dout + (b * d.Tq * d.Hq + h) * D;
    for (int64_t i0 = i_lo; i0 < d.Tq; i0 += QT) {
      __syncthreads();  // previous query tile fully read
      load_tile<D, LD>(qs_mem, QT, qb, ldq, i0, d.Tq);
      load_tile<D, LD>(dos_mem, QT, dob, ldq, i0, d.Tq);
      load_row_stats(l2, dl, lse, delta, d, b, h, i0, QT);
      __syncthreads();
      float st[NQ][4], dpt[NQ][4];
#pragma unroll
      for (int n = 0; n < NQ; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) st[n][e] = dpt[n][e] = 0.f;
#pragma unroll
      for (int kk = 0; kk < KD; ++kk) {
        uint32_t ka[4], va[4];
        ks.a_frag(ka, warp * 16, kk * 16, g, t);
        vs.a_frag(va, warp * 16, kk * 16, g, t);
#pragma unroll
        for (int n = 0; n < NQ; ++n) {
          mma16816(st[n], ka, qs.row_pair(n * 8 + g, kk * 16 + 2 * t),
                   qs.row_pair(n * 8 + g, kk * 16 + 8 + 2 * t));
          mma16816(dpt[n], va, dos.row_pair(n * 8 + g, kk * 16 + 2 * t),
                   dos.row_pair(n * 8 + g, kk * 16 + 8 + 2 * t));
        }
      }
      // Element (key row e / 2, query column n * 8 + 2t + e % 2).
      const bool need_mask = tile_needs_mask(d, i0, j0, kTile);
#pragma unroll
      for (int n = 0; n < NQ; ++n) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int c = n * 8 + 2 * t + (e % 2);
          float p = exp2f(st[n][e] * scale_log2 - l2[c]);
          if (need_mask && masked(d, i0 + c, key[e / 2])) p = 0.f;
          st[n][e] = p;
          dpt[n][e] = p * (dpt[n][e] - dl[c]);
        }
      }
#pragma unroll
      for (int kk = 0; kk < QT / 16; ++kk) {
        uint32_t pa[4], dsa[4];
        c_to_a(pa, st[2 * kk], st[2 * kk + 1]);
        c_to_a(dsa, dpt[2 * kk], dpt[2 * kk + 1]);
#pragma unroll
        for (int n = 0; n < ND; ++n) {
          mma16816(dva[n], pa, dos.col_pair(kk * 16 + 2 * t, n * 8 + g),
                   dos.col_pair(kk * 16 + 8 + 2 * t, n * 8 + g));
          mma16816(dka[n], dsa, qs.col_pair(kk * 16 + 2 * t, n * 8 + g),
                   qs.col_pair(kk * 16 + 8 + 2 * t, n * 8 + g));
        }
      }
    }
  }
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    if (key[r] >= d.Tk) continue;
    const int64_t off = (b * d.Tk + key[r]) * ldk + kvh * D;
#pragma unroll
    for (int n = 0; n < ND; ++n) {
      add_pair(dv + off + n * 8 + 2 * t, dva[n][2 * r], dva[n][2 * r + 1], 1.f);
      add_pair(dk + off + n * 8 + 2 * t, dka[n][2 * r], dka[n][2 * r + 1], scale);
    }
  }
}

// dq of query rows [i0, i0 + 64) of (b, h), over all visible key tiles.
template <int D>
__global__ void __launch_bounds__(kThreads)
    backward_dq_mma_kernel(bf16* dq, const bf16* dout, const bf16* q, const bf16* k, const bf16* v,
                           const float* lse, const float* delta, cpu::AttnDims d, float scale) {
  constexpr int LD = D + 8, KD = D / 16, ND = D / 8;
  extern __shared__ __align__(16) unsigned char smem[];
  bf16* qs_mem = reinterpret_cast<bf16*>(smem);
  bf16* dos_mem = qs_mem + kTile * LD;
  bf16* ks_mem = dos_mem + kTile * LD;
  bf16* vs_mem = ks_mem + kTile * LD;
  float* l2 = reinterpret_cast<float*>(vs_mem + kTile * LD);
  float* dl = l2 + kTile;
  const Tile<LD> qs{qs_mem}, dos{dos_mem}, ks{ks_mem}, vs{vs_mem};
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int64_t i0 = (int64_t{gridDim.x} - 1 - blockIdx.x) * kTile;
  const int64_t h = blockIdx.y, b = blockIdx.z, kvh = h / (d.Hq / d.Hkv);
  const int64_t ldq = d.Hq * d.D, ldk = d.Hkv * d.D;
  const float scale_log2 = scale * kLog2e;
  const bf16* kb = k + (b * d.Tk * d.Hkv + kvh) * D;
  const bf16* vb = v + (b * d.Tk * d.Hkv + kvh) * D;
  load_tile<D, LD>(qs_mem, kTile, q + (b * d.Tq * d.Hq + h) * D, ldq, i0, d.Tq);
  load_tile<D, LD>(dos_mem, kTile, dout + (b * d.Tq * d.Hq + h) * D, ldq, i0, d.Tq);
  load_row_stats(l2, dl, lse, delta, d, b, h, i0, kTile);
  __syncthreads();
  const int rl[2] = {warp * 16 + g, warp * 16 + g + 8};  // local rows
  const float l2r[2] = {l2[rl[0]], l2[rl[1]]}, dlr[2] = {dl[rl[0]], dl[rl[1]]};
  float dqa[ND][4];
#pragma unroll
  for (int n = 0; n < ND; ++n) dqa[n][0] = dqa[n][1] = dqa[n][2] = dqa[n][3] = 0.f;
  const int64_t i_last = (i0 + kTile < d.Tq ? i0 + kTile : d.Tq) - 1;
  const int64_t kend = visible_end(d, i_last);
  for (int64_t j0 = 0; j0 < kend; j0 += kTile) {
    __syncthreads();  // previous key tile fully read
    load_tile<D, LD>(ks_mem, kTile, kb, ldk, j0, d.Tk);
    load_tile<D, LD>(vs_mem, kTile, vb, ldk, j0, d.Tk);
    __syncthreads();
    float s[8][4], dp[8][4];
#pragma unroll
    for (int n = 0; n < 8; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) s[n][e] = dp[n][e] = 0.f;
#pragma unroll
    for (int kk = 0; kk < KD; ++kk) {
      uint32_t qa[4], doa[4];
      qs.a_frag(qa, warp * 16, kk * 16, g, t);
      dos.a_frag(doa, warp * 16, kk * 16, g, t);
#pragma unroll
      for (int n = 0; n < 8; ++n) {
        mma16816(s[n], qa, ks.row_pair(n * 8 + g, kk * 16 + 2 * t),
                 ks.row_pair(n * 8 + g, kk * 16 + 8 + 2 * t));
        mma16816(dp[n], doa, vs.row_pair(n * 8 + g, kk * 16 + 2 * t),
                 vs.row_pair(n * 8 + g, kk * 16 + 8 + 2 * t));
      }
    }
    const bool need_mask = tile_needs_mask(d, i0, j0, kTile);
#pragma unroll
    for (int n = 0; n < 8; ++n) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        float p = exp2f(s[n][e] * scale_log2 - l2r[e / 2]);
        if (need_mask && masked(d, i0 + rl[e / 2], j0 + n * 8 + 2 * t + (e % 2))) p = 0.f;
        dp[n][e] = p * (dp[n][e] - dlr[e / 2]);
      }
    }
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
      uint32_t dsa[4];
      c_to_a(dsa, dp[2 * kk], dp[2 * kk + 1]);
#pragma unroll
      for (int n = 0; n < ND; ++n)
        mma16816(dqa[n], dsa, ks.col_pair(kk * 16 + 2 * t, n * 8 + g),
                 ks.col_pair(kk * 16 + 8 + 2 * t, n * 8 + g));
    }
  }
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int64_t i = i0 + rl[r];
    if (i >= d.Tq) continue;
    bf16* row = dq + (b * d.Tq + i) * ldq + h * D;
#pragma unroll
    for (int n = 0; n < ND; ++n)
      add_pair(row + n * 8 + 2 * t, dqa[n][2 * r], dqa[n][2 * r + 1], scale);
  }
}

template <int D>
constexpr int dkv_query_tile() {
  return D == 128 ? 32 : 64;  // keeps dk, dv, S^T and dP^T within the register file
}
template <int D>
constexpr size_t dkv_smem_bytes() {
  return (2 * kTile + 2 * dkv_query_tile<D>()) * (D + 8) * sizeof(bf16) +
         2 * dkv_query_tile<D>() * sizeof(float);
}
template <int D>
constexpr size_t dq_smem_bytes() {
  return 4 * kTile * (D + 8) * sizeof(bf16) + 2 * kTile * sizeof(float);
}

template <int D>
void forward_mma(bf16* out, float* lse, const bf16* q, const bf16* k, const bf16* v,
                 const cpu::AttnDims& d, float scale, cudaStream_t s) {
  const dim3 grid(static_cast<unsigned>((d.Tq + kTile - 1) / kTile), static_cast<unsigned>(d.Hq),
                  static_cast<unsigned>(d.B));
  forward_mma_kernel<D><<<grid, kThreads, 0, s>>>(out, lse, q, k, v, d, scale * kLog2e);
  PX_CUDA_LAUNCH("attention_forward_mma");
}

template <int D>
void backward_mma(bf16* dq, bf16* dk, bf16* dv, const bf16* dout, const bf16* q, const bf16* k,
                  const bf16* v, const float* lse, const float* delta, const cpu::AttnDims& d,
                  float scale, cudaStream_t s) {
  constexpr int QT = dkv_query_tile<D>();
  constexpr size_t dkv_bytes = dkv_smem_bytes<D>(), dq_bytes = dq_smem_bytes<D>();
  PX_CUDA(cudaFuncSetAttribute(backward_dkv_mma_kernel<D, QT>,
                               cudaFuncAttributeMaxDynamicSharedMemorySize,
                               static_cast<int>(dkv_bytes)));
  PX_CUDA(cudaFuncSetAttribute(backward_dq_mma_kernel<D>,
                               cudaFuncAttributeMaxDynamicSharedMemorySize,
                               static_cast<int>(dq_bytes)));
  const dim3 kgrid(static_cast<unsigned>((d.Tk + kTile - 1) / kTile), static_cast<unsigned>(d.Hkv),
                   static_cast<unsigned>(d.B));
  backward_dkv_mma_kernel<D, QT>
      <<<kgrid, kThreads, dkv_bytes, s>>>(dk, dv, dout, q, k, v, lse, delta, d, scale);
  PX_CUDA_LAUNCH("attention_backward_dkv_mma");
  const dim3 qgrid(static_cast<unsigned>((d.Tq + kTile - 1) / kTile), static_cast<unsigned>(d.Hq),
                   static_cast<unsigned>(d.B));
  backward_dq_mma_kernel<D>
      <<<qgrid, kThreads, dq_bytes, s>>>(dq, dout, q, k, v, lse, delta, d, scale);
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
