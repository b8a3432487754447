// Paged attention kernels (paged_attention.h), fp32. Forward: one warp per
// (query row, query head), online softmax over its visible keys 32 at a time
// (each lane scores one key, then owns D/32 output columns), as the SIMT
// flash kernel (attention_simt.cu) but with keys found through the block
// table. The sequences' metadata travels in the kernel's parameters, up to
// kSeqsPerLaunch sequences a launch, so nothing host-side must outlive the
// call and no device scratch or stream sync is needed. Every output row has
// exactly one writing warp: deterministic.
#include <cmath>

#include "kernels/cuda/arg_check.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/paged_attention.h"
#include "kernels/cuda/reduce.cuh"

namespace parallm::cuda {
namespace {

constexpr int kWarps = 4;  // warps (rows) per block
constexpr int kPerLane = static_cast<int>(kPagedAttnMaxD / 32);
constexpr unsigned kFull = 0xffffffffu;
// Sequences per launch: their metadata must fit the 4 KiB of kernel
// parameters every driver takes (3 KiB here); a bigger batch takes more
// launches, each still >= kSeqsPerLaunch * Hq warps of work.
constexpr int kSeqsPerLaunch = 128;

// The sequences of one launch (empty ones left out): sequence k owns q rows
// [row0[k], row0[k + 1]) at positions q_pos0[k] onwards, its keys in table
// blocks[k] (device memory).
struct SeqBatch {
  int64_t row0[kSeqsPerLaunch + 1];
  int64_t q_pos0[kSeqsPerLaunch];
  const int32_t* blocks[kSeqsPerLaunch];
  int n;
};
static_assert(sizeof(SeqBatch) + 256 <= 4096, "paged attention launch parameters exceed 4 KiB");

struct PoolDims {
  int64_t Hq, Hkv, D, block_size, num_blocks, window;
};

int row_blocks(int64_t rows) {
  const int64_t b = (rows + kWarps - 1) / kWarps;
  return static_cast<int>(b < (1 << 16) ? b : (1 << 16));  // grid-stride loops cover the rest
}

// The pool slot (physical block * block_size + offset) of key position j, or
// -1 when the table names a block outside the pool: that key is skipped
// rather than read out of bounds (the host cannot check device tables).
__device__ inline int64_t key_slot(const int32_t* table, const PoolDims& g, int64_t j) {
  const int64_t phys = table[j / g.block_size];
  return phys >= 0 && phys < g.num_blocks ? phys * g.block_size + j % g.block_size : -1;
}

__global__ void __launch_bounds__(kWarps * 32)
    paged_forward_kernel(float* out, float* lse, const float* q, const float* kp, const float* vp,
                         const __grid_constant__ SeqBatch b, PoolDims g, float scale) {
  __shared__ float qs[kWarps][kPagedAttnMaxD];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t first_row = b.row0[0], items = (b.row0[b.n] - first_row) * g.Hq;
  const int64_t group = g.Hq / g.Hkv, ldk = g.Hkv * g.D;
  for (int64_t item = int64_t{blockIdx.x} * kWarps + warp; item < items;
       item += int64_t{gridDim.x} * kWarps) {
    // item = row * Hq + head: a row's heads sit in neighbouring warps, so
    // the GQA group's key reads meet in L2.
    const int64_t row = first_row + item / g.Hq, h = item % g.Hq;
    int lo = 0, hi = b.n - 1;  // the last sequence starting at or before row
    while (lo < hi) {
      const int mid = (lo + hi + 1) / 2;
      if (b.row0[mid] <= row) {
        lo = mid;
      } else {
        hi = mid - 1;
      }
    }
    const int32_t* table = b.blocks[lo];
    const int64_t pos = b.q_pos0[lo] + (row - b.row0[lo]);
    // Keys [j0, j1): causal, and the sliding window as cpu Geometry::first.
    const int64_t j1 = pos + 1;
    const int64_t j0 = g.window > 0 && pos - g.window + 1 > 0 ? pos - g.window + 1 : 0;
    const int64_t off = (row * g.Hq + h) * g.D;
    const float* kb = kp + (h / group) * g.D;  // key in slot p at kb + p * ldk
    const float* vb = vp + (h / group) * g.D;
    __syncwarp();
    for (int64_t e = lane; e < g.D; e += 32) qs[warp][e] = q[off + e];
    __syncwarp();
    float m = -INFINITY, l = 0.f, acc[kPerLane];
#pragma unroll
    for (int r = 0; r < kPerLane; ++r) acc[r] = 0.f;
    for (int64_t c = j0; c < j1; c += 32) {
      const int64_t j = c + lane;
      const int64_t slot = j < j1 ? key_slot(table, g, j) : -1;
      float sc = -INFINITY;
      if (slot >= 0) {
        const float* kr = kb + slot * ldk;
        float dot = 0.f;
        for (int64_t e = 0; e < g.D; ++e) dot += qs[warp][e] * kr[e];
        sc = dot * scale;
      }
      const float mn = fmaxf(m, warp_max(sc));
      // mn is -inf only while every key so far was skipped (acc and l are
      // still 0): keep them, rather than scale by exp(-inf - -inf) = NaN.
      const float alpha = mn == -INFINITY ? 1.f : expf(m - mn);
      const float p = slot >= 0 ? expf(sc - mn) : 0.f;
      l = l * alpha + warp_sum(p);
#pragma unroll
      for (int r = 0; r < kPerLane; ++r) acc[r] *= alpha;
      const int n = static_cast<int>(j1 - c < 32 ? j1 - c : 32);
      for (int jj = 0; jj < n; ++jj) {
        const float pj = __shfl_sync(kFull, p, jj);
        const long long sj = __shfl_sync(kFull, static_cast<long long>(slot), jj);
        if (sj < 0) continue;  // warp-uniform: every lane holds the same sj
        const float* vr = vb + sj * ldk;
#pragma unroll
        for (int r = 0; r < kPerLane; ++r) {
          const int64_t e = lane + 32 * r;
          if (e < g.D) acc[r] += pj * vr[e];
        }
      }
      m = mn;
    }
    // Every query sees at least its own key, so l > 0 unless the table was
    // bad; then out = 0 and lse = -inf, as the CPU's guard.
    const float inv = l > 0.f ? 1.f / l : 0.f;
#pragma unroll
    for (int r = 0; r < kPerLane; ++r) {
      const int64_t e = lane + 32 * r;
      if (e < g.D) out[off + e] = acc[r] * inv;
    }
    if (lse != nullptr && lane == 0) lse[row * g.Hq + h] = l > 0.f ? m + logf(l) : -INFINITY;
  }
}

__global__ void paged_kv_write_kernel(float* pool, int64_t num_blocks, int64_t block_size,
                                      int64_t row_elems, const int32_t* blocks, int64_t pos0,
                                      int64_t n, const float* src) {
  const int64_t total = n * row_elems;
  for (int64_t i = grid_index(); i < total; i += grid_stride()) {
    const int64_t t = i / row_elems, e = i - t * row_elems, pos = pos0 + t;
    const int64_t phys = blocks[pos / block_size];
    if (phys < 0 || phys >= num_blocks) continue;  // bad table entry: never write outside
    pool[(phys * block_size + pos % block_size) * row_elems + e] = src[i];
  }
}

void check_dims(const cpu::PagedAttnDims& d) {
  constexpr const char* name = "cuda::paged_attention_forward";
  require_arg(d.D >= 1 && d.D <= kPagedAttnMaxD, name, "head dim D in 1..256, D", d.D);
  require_arg(d.block_size >= 1, name, "block_size >= 1, block_size", d.block_size);
  require_arg(d.num_blocks >= 1, name, "num_blocks >= 1, num_blocks", d.num_blocks);
  require_arg(d.Hkv >= 1, name, "kv heads Hkv >= 1, Hkv", d.Hkv);
  require_arg(d.Hq >= 1 && d.Hq % d.Hkv == 0, name, "query heads a positive multiple of Hkv, Hq",
              d.Hq);
  require_arg(d.window >= 0, name, "sliding window >= 0 (0: none), window", d.window);
}

void check_seq(const cpu::PagedSeq& s, const cpu::PagedAttnDims& d) {
  constexpr const char* name = "cuda::paged_attention_forward";
  require_arg(s.Tq >= 0, name, "a sequence's Tq >= 0, Tq", s.Tq);
  require_arg(s.q_pos0 >= 0, name, "a sequence's q_pos0 >= 0, q_pos0", s.q_pos0);
  const int64_t need = (s.q_pos0 + s.Tq + d.block_size - 1) / d.block_size;
  require_arg(s.n_blocks >= need, name,
              "a block table covering q_pos0 + Tq positions, entries needed", need);
  require_arg(s.Tq == 0 || s.blocks != nullptr, name, "a device block table, Tq", s.Tq);
}

}  // namespace

void paged_attention_forward(float* out, float* lse, const float* q, const float* k_pool,
                             const float* v_pool, const cpu::PagedSeq* seqs, int64_t n_seqs,
                             const cpu::PagedAttnDims& d, double scale, cudaStream_t s) {
  check_dims(d);
  require_arg(n_seqs >= 0, "cuda::paged_attention_forward", "n_seqs >= 0, n_seqs", n_seqs);
  for (int64_t i = 0; i < n_seqs; ++i) check_seq(seqs[i], d);
  const PoolDims g{d.Hq, d.Hkv, d.D, d.block_size, d.num_blocks, d.window};
  const float sc = static_cast<float>(scale);
  SeqBatch b{};
  int64_t row = 0;
  auto launch = [&] {
    b.row0[b.n] = row;
    const int64_t items = (row - b.row0[0]) * d.Hq;
    paged_forward_kernel<<<row_blocks(items), kWarps * 32, 0, s>>>(out, lse, q, k_pool, v_pool, b,
                                                                   g, sc);
    PX_CUDA_LAUNCH("paged_attention_forward");
    b.n = 0;
  };
  for (int64_t i = 0; i < n_seqs; ++i) {
    const cpu::PagedSeq& sq = seqs[i];
    if (sq.Tq > 0) {
      b.row0[b.n] = row;
      b.q_pos0[b.n] = sq.q_pos0;
      b.blocks[b.n] = sq.blocks;
      ++b.n;
    }
    row += sq.Tq;
    if (b.n == kSeqsPerLaunch) launch();
  }
  if (b.n > 0) launch();
}

void paged_kv_write(float* pool, int64_t num_blocks, int64_t block_size, int64_t row_elems,
                    const int32_t* blocks, int64_t n_blocks, int64_t pos0, int64_t n,
                    const float* src, cudaStream_t s) {
  constexpr const char* name = "cuda::paged_kv_write";
  require_arg(block_size >= 1, name, "block_size >= 1, block_size", block_size);
  require_arg(pos0 >= 0, name, "pos0 >= 0, pos0", pos0);
  require_arg(n >= 0, name, "n >= 0, n", n);
  require_arg(row_elems >= 0, name, "row_elems >= 0, row_elems", row_elems);
  const int64_t need = (pos0 + n + block_size - 1) / block_size;
  require_arg(n_blocks >= need, name, "a block table covering pos0 + n positions, entries needed",
              need);
  if (n == 0 || row_elems == 0) return;
  require_arg(blocks != nullptr, name, "a device block table, n", n);
  paged_kv_write_kernel<<<elementwise_blocks(n * row_elems), kElementwiseThreads, 0, s>>>(
      pool, num_blocks, block_size, row_elems, blocks, pos0, n, src);
  PX_CUDA_LAUNCH("paged_kv_write");
}

}  // namespace parallm::cuda
