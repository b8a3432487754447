// quant_linear_forward (see quant_gemm.h): the dot products' instruction
// set chosen once per process, the layout at load.
#include "kernels/cpu/quant_gemm.h"

#include <omp.h>

#include <algorithm>

#include "base/error.h"
#include "kernels/cpu/cpu_isa.h"
#include "kernels/cpu/quant_dot.h"
#include "kernels/cpu/quant_packed.h"
#include "kernels/cpu/quant_packed_dot.h"
#include "tensor/tensor.h"

namespace parallm::cpu {

namespace {
// Rows of output a thread takes at a time in the row layout: whole cache
// lines of out, and enough weight bytes per task to stream well.
constexpr int64_t kRowChunk = 16;

void add_bias(float* out, const float* bias, int64_t M, int64_t N) {
  if (bias == nullptr) return;
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) out[m * N + n] += bias[n];
}

// The activation rows [m0, m0 + 8) (or fewer, at the end) of x.
QuantRows chunk(const QuantRows& x, int64_t m0) {
  const int64_t nb = x.K / 32;
  return {x.q + m0 * x.K, x.d + m0 * nb, x.s + m0 * nb, x.sum + m0 * nb, x.K};
}
int chunk_rows(int64_t M, int64_t m0) {
  return static_cast<int>(std::min(kQuantDotMaxRows, M - m0));
}

// Each task takes a few weight rows (kRowChunk of the row layout, or one
// packed group of 8) through every chunk of 8 activation rows: W is read
// from memory once per call, and the chunks after the first find the task's
// rows in L1. A prompt of many rows is then the decode kernel's work, batched.
void rows_layout(QuantDotPath p, const QuantWeight& w, const QuantRows& x, int64_t M, float* o) {
  const int64_t N = w.rows();
  const int tail = static_cast<int>(M % kQuantDotMaxRows);
  const QuantRowDotFn full = quant_row_dot_fn(static_cast<int>(p), w.type(),
                                              static_cast<int>(std::min(M, kQuantDotMaxRows)));
  const QuantRowDotFn last =
      tail != 0 ? quant_row_dot_fn(static_cast<int>(p), w.type(), tail) : full;
#pragma omp parallel for schedule(static)
  for (int64_t n0 = 0; n0 < N; n0 += kRowChunk) {
    float res[kQuantDotMaxRows];
    for (int64_t m0 = 0; m0 < M; m0 += kQuantDotMaxRows) {
      const int rows = chunk_rows(M, m0);
      const QuantRows xc = chunk(x, m0);
      const QuantRowDotFn fn = rows == kQuantDotMaxRows ? full : last;
      for (int64_t n = n0; n < std::min(N, n0 + kRowChunk); ++n) {
        fn(w.row(n), xc, res);
        for (int m = 0; m < rows; ++m) o[(m0 + m) * N + n] = res[m];
      }
    }
  }
}

void packed_layout(const QuantWeight& w, const QuantRows& x, int64_t M, float* o) {
  const int64_t N = w.rows(), groups = (N + kPackRows - 1) / kPackRows;
  const bool vnni = w.layout() == QuantLayout::kPackedVnni;
  const int tail = static_cast<int>(M % kQuantDotMaxRows);
  const PackedGroupFn full =
      packed_group_fn(vnni, w.type(), static_cast<int>(std::min(M, kQuantDotMaxRows)));
  const PackedGroupFn last = tail != 0 ? packed_group_fn(vnni, w.type(), tail) : full;
#pragma omp parallel for schedule(static)
  for (int64_t g = 0; g < groups; ++g) {
    const int valid = static_cast<int>(std::min(kPackRows, N - g * kPackRows));
    for (int64_t m0 = 0; m0 < M; m0 += kQuantDotMaxRows) {
      const PackedGroupFn fn = chunk_rows(M, m0) == kQuantDotMaxRows ? full : last;
      fn(w.group(g), chunk(x, m0), o + m0 * N + g * kPackRows, N, valid);
    }
  }
}

void dot_rows(QuantDotPath p, Allocator& a, float* out, const float* inp, const QuantWeight& w,
              int64_t M) {
  const int64_t K = w.cols(), nb = K / 32;
  Tensor xq = Tensor::zeros(a, Shape{std::max<int64_t>(M * K, 1)}, DType::I8, MemTag::Workspace);
  Tensor xs = Tensor::zeros(a, Shape{std::max<int64_t>(2 * M * nb, 1)}, DType::F32,
                            MemTag::Workspace);
  Tensor xi = Tensor::zeros(a, Shape{std::max<int64_t>(M * nb, 1)}, DType::I32, MemTag::Workspace);
  float* d = xs.data<float>();
  float* s = d + M * nb;
  int32_t* sum = xi.data<int32_t>();
  quantize_rows_q8(inp, M, K, xq.data<int8_t>(), d, s, sum);
  const QuantRows x{xq.data<int8_t>(), d, s, sum, K};
  if (w.layout() == QuantLayout::kRows)
    rows_layout(p, w, x, M, out);
  else
    packed_layout(w, x, M, out);
}

QuantDotPath layout_path(QuantLayout l) {
  return l == QuantLayout::kPackedVnni ? QuantDotPath::kVnni : QuantDotPath::kAvx2;
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
                          const float* bias, int64_t M) {
  dot_rows(quant_dot_path(), a, out, inp, w, M);
  add_bias(out, bias, M, w.rows());
}

}  // namespace parallm::cpu
