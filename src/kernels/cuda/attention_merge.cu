// attention_merge (attention_merge.h): one warp per (batch, head, row) of the
// chunk, the row's two weights computed in double exactly as the CPU loop
// (kernels/cpu/attention_merge.cpp), then its D columns updated by the lanes.
// The running lse is read by every lane before lane 0 overwrites it
// (__syncwarp between), so a row's read and write never race.
#include <cmath>

#include "kernels/cuda/arg_check.h"
#include "kernels/cuda/attention_merge.h"
#include "kernels/cuda/cuda_check.h"

namespace parallm::cuda {
namespace {

constexpr int kWarps = 8;  // rows per block

__global__ void __launch_bounds__(kWarps * 32)
    attention_merge_kernel(float* out, float* lse, const float* part_out, const float* part_lse,
                           int64_t B, int64_t Hq, int64_t D, int64_t nq, int64_t len, int64_t i) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t rows = B * Hq * len, qrow = Hq * D;
  for (int64_t r = int64_t{blockIdx.x} * kWarps + warp; r < rows;
       r += int64_t{gridDim.x} * kWarps) {
    const int64_t t = r % len, bh = r / len, h = bh % Hq, b = bh / Hq;
    const float lp = part_lse[r];   // part_lse (B, Hq, len): r = (b * Hq + h) * len + t
    if (lp == -INFINITY) continue;  // the pair saw no key of this row (warp-uniform)
    float* la_p = lse + bh * nq * len + i * len + t;
    const float la = *la_p;
    __syncwarp();  // every lane has read la before lane 0 may overwrite it
    float* o = out + ((b * nq + i) * len + t) * qrow + h * D;
    const float* op = part_out + (b * len + t) * qrow + h * D;
    if (la == -INFINITY) {  // no running result yet: take the pair's
      for (int64_t e = lane; e < D; e += 32) o[e] = op[e];
      if (lane == 0) *la_p = lp;
      continue;
    }
    const double m = fmaxf(la, lp);
    const double ea = exp(la - m), ep = exp(lp - m), s = ea + ep;
    const float wa = static_cast<float>(ea / s), wp = static_cast<float>(ep / s);
    for (int64_t e = lane; e < D; e += 32) o[e] = o[e] * wa + op[e] * wp;
    if (lane == 0) *la_p = static_cast<float>(m + log(s));
  }
}

}  // namespace

void attention_merge(float* out, float* lse, const float* part_out, const float* part_lse,
                     int64_t B, int64_t Hq, int64_t D, int64_t nq, int64_t len, int64_t i,
                     cudaStream_t s) {
  constexpr const char* name = "cuda::attention_merge";
  require_arg(B >= 0, name, "B >= 0, B", B);
  require_arg(Hq >= 0, name, "Hq >= 0, Hq", Hq);
  require_arg(D >= 0, name, "D >= 0, D", D);
  require_arg(len >= 0, name, "len >= 0, len", len);
  require_arg(nq >= 1, name, "nq >= 1, nq", nq);
  require_arg(i >= 0 && i < nq, name, "chunk i in [0, nq), i", i);
  const int64_t rows = B * Hq * len;
  if (rows == 0) return;
  const int64_t blocks = (rows + kWarps - 1) / kWarps;
  attention_merge_kernel<<<static_cast<int>(blocks < (1 << 16) ? blocks : (1 << 16)), kWarps * 32,
                           0, s>>>(out, lse, part_out, part_lse, B, Hq, D, nq, len, i);
  PX_CUDA_LAUNCH("attention_merge");
}

}  // namespace parallm::cuda
