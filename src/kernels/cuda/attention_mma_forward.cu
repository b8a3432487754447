// bf16 flash attention forward on tensor cores (attention_mma.cuh).
#include "kernels/cuda/attention_mma.cuh"

namespace parallm::cuda::detail {
namespace {

using namespace mma;

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
}  // namespace

void attention_forward_mma(bf16* out, float* lse, const bf16* q, const bf16* k, const bf16* v,
                           const cpu::AttnDims& d, float scale, cudaStream_t s) {
  if (d.D == 64)
    forward_mma<64>(out, lse, q, k, v, d, scale, s);
  else
    forward_mma<128>(out, lse, q, k, v, d, scale, s);
}

}  // namespace parallm::cuda::detail
