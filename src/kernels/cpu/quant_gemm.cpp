// quant_linear_forward (see quant_gemm.h): the path chosen per call by the
// row count, the dot products' instruction set once per process.
#include "kernels/cpu/quant_gemm.h"

#include <omp.h>

#include <algorithm>

#include "base/error.h"
#include "kernels/cpu/cpu_isa.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/quant_dot.h"
#include "kernels/cpu/quant_packed.h"
#include "kernels/cpu/quant_packed_dot.h"
#include "tensor/tensor.h"

namespace parallm::cpu {

namespace {
// Rows of output a thread takes at a time: whole cache lines of out, and
// enough weight bytes per task to stream well.
constexpr int64_t kRowChunk = 16;
// Dequantised tile of W for the prompt path: bounded, so the LM head of a
// large vocabulary never exists in f32 at once.
constexpr int64_t kTileBytes = 8 << 20;

void add_bias(float* out, const float* bias, int64_t M, int64_t N) {
  if (bias == nullptr) return;
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) out[m * N + n] += bias[n];
}

// Row layout: each weight row against `rows` activation rows.
void rows_layout(QuantDotPath p, const QuantWeight& w, const QuantRows& x, int rows, float* o) {
  const int64_t N = w.rows();
  const QuantRowDotFn fn = quant_row_dot_fn(static_cast<int>(p), w.type(), rows);
#pragma omp parallel for schedule(static)
  for (int64_t n0 = 0; n0 < N; n0 += kRowChunk) {
    float res[kQuantDotMaxRows];
    for (int64_t n = n0; n < std::min(N, n0 + kRowChunk); ++n) {
      fn(w.row(n), x, res);
      for (int m = 0; m < rows; ++m) o[m * N + n] = res[m];
    }
  }
}

// Packed: each group of 8 weight rows against `rows` activation rows.
void packed_layout(const QuantWeight& w, const QuantRows& x, int rows, float* o) {
  const int64_t N = w.rows(), groups = (N + kPackRows - 1) / kPackRows;
  const PackedGroupFn fn =
      packed_group_fn(w.layout() == QuantLayout::kPackedVnni, w.type(), rows);
#pragma omp parallel for schedule(static)
  for (int64_t g = 0; g < groups; ++g)
    fn(w.group(g), x, o + g * kPackRows, N,
       static_cast<int>(std::min(kPackRows, N - g * kPackRows)));
}

void dot_rows(QuantDotPath p, Allocator& a, float* out, const float* inp, const QuantWeight& w,
              int64_t M) {
  const int64_t N = w.rows(), K = w.cols(), nb = K / 32;
  Tensor xq = Tensor::zeros(a, Shape{std::max<int64_t>(M * K, 1)}, DType::I8, MemTag::Workspace);
  Tensor xs = Tensor::zeros(a, Shape{std::max<int64_t>(2 * M * nb, 1)}, DType::F32,
                            MemTag::Workspace);
  Tensor xi = Tensor::zeros(a, Shape{std::max<int64_t>(M * nb, 1)}, DType::I32, MemTag::Workspace);
  float* d = xs.data<float>();
  float* s = d + M * nb;
  int32_t* sum = xi.data<int32_t>();
  quantize_rows_q8(inp, M, K, xq.data<int8_t>(), d, s, sum);
  for (int64_t m0 = 0; m0 < M; m0 += kQuantDotMaxRows) {
    const int rows = static_cast<int>(std::min(kQuantDotMaxRows, M - m0));
    const QuantRows x{xq.data<int8_t>() + m0 * K, d + m0 * nb, s + m0 * nb, sum + m0 * nb, K};
    if (w.layout() == QuantLayout::kRows)
      rows_layout(p, w, x, rows, out + m0 * N);
    else
      packed_layout(w, x, rows, out + m0 * N);
  }
}

QuantDotPath layout_path(QuantLayout l) {
  return l == QuantLayout::kPackedVnni ? QuantDotPath::kVnni : QuantDotPath::kAvx2;
}

// Prompts: tiles of W dequantised (rows split over the threads) into the
// dense GEMM, 16-bit when `lowp` is given.
void tiled_gemm(Allocator& a, float* out, const float* inp, const QuantWeight& w, int64_t M,
                const LowpGemm* lowp) {
  const int64_t N = w.rows(), K = w.cols();
  const int64_t tile = std::clamp<int64_t>(kTileBytes / (4 * K), 1, N);
  Tensor wt = Tensor::zeros(a, Shape{tile * K}, DType::F32, MemTag::Workspace);
  Tensor w16, x16;
  if (lowp != nullptr) {
    const DType dt = lowp->type() == LowpType::BF16 ? DType::BF16 : DType::F16;
    w16 = Tensor::zeros(a, Shape{tile * K}, dt, MemTag::Workspace);
    x16 = Tensor::zeros(a, Shape{M * K}, dt, MemTag::Workspace);
    round_to_lowp(x16.half_bits(), inp, M * K, lowp->type());
  }
  for (int64_t n0 = 0; n0 < N; n0 += tile) {
    const int64_t rows = std::min(tile, N - n0);
    float* wf = wt.data<float>();
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r) w.dequantize_rows(n0 + r, n0 + r + 1, wf + r * K);
    // out[:, n0:n0+rows] = inp tile^T: a column slice of out, row stride N.
    if (lowp != nullptr) {
      round_to_lowp(w16.half_bits(), wf, rows * K, lowp->type());
      lowp->gemm(false, true, M, rows, K, x16.half_bits(), K, w16.half_bits(), K, 0.0f, out + n0,
                 N, a);
    } else {
      gemm<float>(false, true, M, rows, K, 1.0f, inp, K, wf, K, 0.0f, out + n0, N);
    }
  }
}
}  // namespace

bool quant_dot_path_available(QuantDotPath p) {
  switch (p) {
    case QuantDotPath::kScalar: return true;
    case QuantDotPath::kAvx2: return quant_dot_built_avx2() && cpu_isa_has(CpuIsa::kAvx2);
    case QuantDotPath::kVnni:
      return quant_dot_built_vnni() && cpu_isa_has(CpuIsa::kAvx512CoreVnni);
  }
  return false;
}

QuantDotPath quant_dot_path() {
  if (quant_dot_path_available(QuantDotPath::kVnni)) return QuantDotPath::kVnni;
  if (quant_dot_path_available(QuantDotPath::kAvx2)) return QuantDotPath::kAvx2;
  return QuantDotPath::kScalar;
}

const char* quant_dot_path_name(QuantDotPath p) {
  switch (p) {
    case QuantDotPath::kScalar: return "scalar";
    case QuantDotPath::kAvx2: return "avx2";
    case QuantDotPath::kVnni: return "avx512_vnni";
  }
  return "?";
}

QuantLayout resolve_quant_layout(QuantLayout l, QuantType t) {
  if (l != QuantLayout::kAuto) return l;
  if (!quant_packs(t)) return QuantLayout::kRows;
  switch (quant_dot_path()) {
    case QuantDotPath::kVnni: return QuantLayout::kPackedVnni;
    case QuantDotPath::kAvx2: return QuantLayout::kPackedAvx2;
    case QuantDotPath::kScalar: break;
  }
  return QuantLayout::kRows;
}

void quant_dot_rows(QuantDotPath p, Allocator& a, float* out, const float* inp,
                    const QuantWeight& w, int64_t M) {
  PX_CHECK(quant_dot_path_available(p), "the {} dot-product path cannot run here",
           quant_dot_path_name(p));
  PX_CHECK(w.layout() == QuantLayout::kRows || layout_path(w.layout()) == p,
           "a weight packed for {} runs on that path, not {}",
           quant_dot_path_name(layout_path(w.layout())), quant_dot_path_name(p));
  PX_CHECK(w.cols() % 32 == 0, "quantised weight columns ({}) must be a multiple of 32",
           w.cols());
  dot_rows(p, a, out, inp, w, M);
}

void quant_linear_forward(Allocator& a, float* out, const float* inp, const QuantWeight& w,
                          const float* bias, int64_t M, const LowpGemm* lowp) {
  if (M <= kQuantDotMaxRows)
    dot_rows(quant_dot_path(), a, out, inp, w, M);
  else
    tiled_gemm(a, out, inp, w, M, lowp);
  add_bias(out, bias, M, w.rows());
}

}  // namespace parallm::cpu
