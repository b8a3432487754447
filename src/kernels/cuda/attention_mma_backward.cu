// bf16 flash attention backward on tensor cores (attention_mma.cuh): the
// dk/dv kernel per key block and the dq kernel per query tile.
#include "kernels/cuda/attention_mma.cuh"

namespace parallm::cuda::detail {
namespace {

using namespace mma;

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

void attention_backward_mma(bf16* dq, bf16* dk, bf16* dv, const bf16* dout, const bf16* q,
                            const bf16* k, const bf16* v, const float* lse, const float* delta,
                            const cpu::AttnDims& d, float scale, cudaStream_t s) {
  if (d.D == 64)
    backward_mma<64>(dq, dk, dv, dout, q, k, v, lse, delta, d, scale, s);
  else
    backward_mma<128>(dq, dk, dv, dout, q, k, v, lse, delta, d, scale, s);
}

}  // namespace parallm::cuda::detail
