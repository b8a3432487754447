// Grouped linear forward/backward (see grouped_gemm.h): tiles of rows (or
// of output columns for the weight gradient) over all groups, scheduled
// dynamically in one OpenMP region; each tile is one single-threaded GEMM.
#include "kernels/cpu/grouped_gemm.h"

#include <algorithm>
#include <vector>

#include "kernels/cpu/matmul.h"

namespace parallm::cpu {
namespace {

constexpr int64_t kRowTile = 64;  // rows per tile: big enough for a GEMM kernel
constexpr int64_t kColTile = 64;  // weight-gradient rows (output features) per tile

struct Tile {
  int64_t group, begin, end;
};

// Tiles of [0, extent(g)) for every non-empty group.
template <class Extent>
std::vector<Tile> tiles(int64_t groups, int64_t step, Extent extent) {
  std::vector<Tile> t;
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t b = 0, n = extent(g); b < n; b += step) t.push_back({g, b, std::min(n, b + step)});
  return t;
}

}  // namespace

void grouped_linear_forward(float* out, const float* inp, const float* weight, const float* bias,
                            const int64_t* offsets, int64_t groups, int64_t IC, int64_t OC) {
  const auto ts = tiles(groups, kRowTile, [&](int64_t g) { return offsets[g + 1] - offsets[g]; });
  const int64_t n = static_cast<int64_t>(ts.size());
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t i = 0; i < n; ++i) {
    const Tile& t = ts[i];
    const int64_t r0 = offsets[t.group] + t.begin, rows = t.end - t.begin;
    float* o = out + r0 * OC;
    const float* w = weight + t.group * OC * IC;
    gemm<float>(false, true, rows, OC, IC, 1.0f, inp + r0 * IC, IC, w, IC, 0.0f, o, OC);
    if (bias)
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < OC; ++c) o[r * OC + c] += bias[t.group * OC + c];
  }
}

void grouped_linear_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                             const float* inp, const float* weight, const int64_t* offsets,
                             int64_t groups, int64_t IC, int64_t OC) {
  if (dinp) {
    const auto ts = tiles(groups, kRowTile, [&](int64_t g) { return offsets[g + 1] - offsets[g]; });
    const int64_t n = static_cast<int64_t>(ts.size());
#pragma omp parallel for schedule(dynamic, 1)
    for (int64_t i = 0; i < n; ++i) {
      const Tile& t = ts[i];
      const int64_t r0 = offsets[t.group] + t.begin;
      gemm<float>(false, false, t.end - t.begin, IC, OC, 1.0f, dout + r0 * OC, OC,
                  weight + t.group * OC * IC, IC, 1.0f, dinp + r0 * IC, IC);
    }
  }
  if (dweight || dbias) {
    // Tiles of output features; a group without rows has nothing to add.
    const auto ts = tiles(groups, kColTile,
                          [&](int64_t g) { return offsets[g + 1] > offsets[g] ? OC : int64_t{0}; });
    const int64_t n = static_cast<int64_t>(ts.size());
#pragma omp parallel for schedule(dynamic, 1)
    for (int64_t i = 0; i < n; ++i) {
      const Tile& t = ts[i];
      const int64_t r0 = offsets[t.group], rows = offsets[t.group + 1] - r0;
      const int64_t cols = t.end - t.begin;
      const float* d = dout + r0 * OC + t.begin;
      if (dweight)  // dW[begin:end, :] += dout[:, begin:end]^T inp
        gemm<float>(true, false, cols, IC, rows, 1.0f, d, OC, inp + r0 * IC, IC, 1.0f,
                    dweight + t.group * OC * IC + t.begin * IC, IC);
      if (dbias)
        for (int64_t c = 0; c < cols; ++c) {
          float s = 0.0f;
          for (int64_t r = 0; r < rows; ++r) s += d[r * OC + c];
          dbias[t.group * OC + t.begin + c] += s;
        }
    }
  }
}

void grouped_linear_forward_loop(float* out, const float* inp, const float* weight,
                                 const float* bias, const int64_t* offsets, int64_t groups,
                                 int64_t IC, int64_t OC) {
  for (int64_t g = 0; g < groups; ++g) {
    const int64_t r0 = offsets[g], rows = offsets[g + 1] - r0;
    if (rows > 0)
      linear_forward<float>(out + r0 * OC, inp + r0 * IC, weight + g * OC * IC,
                            bias ? bias + g * OC : nullptr, rows, IC, OC);
  }
}

}  // namespace parallm::cpu
