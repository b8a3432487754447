// Dispatch of the model's GEMMs on the context's precision. Invariant: with
// c.matmul == nullptr every function is bit-for-bit the fp32 kernel call it
// replaces; under bf16/fp16 both GEMM operands are rounded to 16 bits first
// (a few rows times a weight, as in decode, read the weight's 16-bit copy
// through the skinny kernel instead of a 16-bit GEMM: same products, f32 sums).
#include "nn/matmul_precision.h"

#include <algorithm>

#include "base/error.h"
#include "ops/activation.h"
#include "ops/copy.h"
#include "ops/matmul.h"
#include "ops/nf4.h"
#include "ops/quant.h"

namespace parallm {

namespace {
ops::LowpType lowp_type(Precision p) {
  PX_CHECK(p != Precision::FP32, "MatmulPrecision is for bf16 or fp16, not fp32");
  return p == Precision::BF16 ? ops::LowpType::BF16 : ops::LowpType::F16;
}

// n f32 values of an operand rounded to 16 bits, in a workspace.
Tensor rounded(const LayerContext& c, const float* x, int64_t n) {
  Tensor t = Tensor::zeros(c.alloc, {std::max<int64_t>(n, 1)},
                           c.matmul->type() == ops::LowpType::BF16 ? DType::BF16 : DType::F16,
                           MemTag::Workspace);
  ops::round_to_lowp(c.stream(), t.half_bits(), x, n, c.matmul->type());
  return t;
}

// QLoRA's frozen NF4 base (docs/qlora.md): the tiled dequantising GEMM. Under
// bf16/fp16 both operands are rounded to 16 bits as for any weight (the
// activation here, each dequantised tile inside the kernel).
std::optional<ops::LowpType> nf4_round(const LayerContext& c) {
  if (c.matmul == nullptr) return std::nullopt;
  return c.matmul->type();
}
const float* nf4_operand(const LayerContext& c, const float* x, int64_t n, Tensor& buf) {
  if (c.matmul == nullptr) return x;
  buf = c.workspace({std::max<int64_t>(n, 1)});
  ops::copy(c.stream(), buf.data<float>(), x, static_cast<size_t>(n) * sizeof(float));
  ops::round_inplace(c.stream(), buf.data<float>(), n, c.matmul->type());
  return buf.data<float>();
}
}  // namespace

MatmulPrecision::MatmulPrecision(Precision precision, const ParameterSet& ps, Allocator& alloc,
                                 bool allow_native)
    : precision_(precision),
      gemm_(lowp_type(precision), allow_native),
      valid_(static_cast<size_t>(ps.size()), 0) {
  // Quantised weights (QLoRA's NF4, GGUF blocks) get no 16-bit copy: their
  // tiles are rounded in the GEMM.
  int64_t total = 0;
  for (int i = 0; i < ps.size(); ++i) {
    offsets_.push_back(ps.quantized(i) ? -1 : total);
    if (offsets_.back() >= 0) total += (ps.numel(i) + 15) / 16 * 16;
  }
  copy_ = Tensor::zeros(alloc, {std::max<int64_t>(total, 1)},
                        precision == Precision::BF16 ? DType::BF16 : DType::F16, MemTag::Parameter);
}

const uint16_t* MatmulPrecision::weight(const ParameterSet& ps, ParamRef w) {
  const int64_t at = offsets_[static_cast<size_t>(w.index)];
  PX_CHECK(at >= 0, "'{}' is a quantised weight: it has no 16-bit copy", ps.spec(w.index).name);
  uint16_t* dst = copy_.half_bits() + at;
  if (!valid_[static_cast<size_t>(w.index)]) {
    ops::round_to_lowp(ops::Stream::of(copy_), dst, ps.value(w), ps.numel(w.index),
                       type());
    valid_[static_cast<size_t>(w.index)] = 1;
  }
  return dst;
}

void matmul_weight(const LayerContext& c, bool trans_a, bool trans_w, int64_t M, int64_t N,
                   int64_t K, const float* A, int64_t lda, ParamRef w, const float* wvals,
                   int64_t ldw, float beta, float* C, int64_t ldc) {
  if (const ops::QuantWeight* q = c.params.quant(w)) {  // inference: the forward product only
    PX_CHECK(!trans_a && trans_w && beta == 0.0f && lda == K && ldc == N,
             "'{}' is held in {} blocks: it serves C = A W^T only", c.params.spec(w.index).name,
             ops::quant_traits(q->type()).name);
    return ops::quant_linear_forward(c.stream(), c.alloc, C, A, *q, nullptr, M);
  }
  if (c.matmul == nullptr)
    return ops::gemm(c.stream(), trans_a, trans_w, M, N, K, 1.0f, A, lda, wvals, ldw, beta, C, ldc);
  if (ops::skinny_fits(c.stream(), trans_a, trans_w, M)) {
    // Decode: W's 16-bit copy is read directly (half the bytes of f32, and
    // no widened copy of W); A's rows rounded to 16 bits first, so the
    // products are those of the 16-bit GEMM, summed in f32.
    Tensor a = c.workspace({M, K});
    for (int64_t m = 0; m < M; ++m)
      ops::copy(c.stream(), a.data<float>() + m * K, A + m * lda,
                static_cast<size_t>(K) * sizeof(float));
    ops::round_inplace(c.stream(), a.data<float>(), M * K, c.matmul->type());
    return ops::skinny_gemm_nt_lowp(c.stream(), M, N, K, 1.0f, a.data<float>(), K,
                                    c.matmul->weight(c.params, w), c.matmul->type(), ldw, beta, C,
                                    ldc);
  }
  Tensor a = rounded(c, A, (trans_a ? K : M) * lda);
  ops::lowp_gemm(c.stream(), c.matmul->gemm(), trans_a, trans_w, M, N, K, a.half_bits(), lda,
                 c.matmul->weight(c.params, w), ldw, beta, C, ldc, c.alloc);
}

void matmul_act(const LayerContext& c, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K,
                const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
                int64_t ldc) {
  if (c.matmul == nullptr)
    return ops::gemm(c.stream(), trans_a, trans_b, M, N, K, 1.0f, A, lda, B, ldb, beta, C, ldc);
  Tensor a = rounded(c, A, (trans_a ? K : M) * lda);
  Tensor b = rounded(c, B, (trans_b ? N : K) * ldb);
  ops::lowp_gemm(c.stream(), c.matmul->gemm(), trans_a, trans_b, M, N, K, a.half_bits(), lda,
                 b.half_bits(), ldb, beta, C, ldc, c.alloc);
}

void linear_forward(const LayerContext& c, float* out, const float* inp, ParamRef w,
                    const float* bias, int64_t N, int64_t IC, int64_t OC) {
  if (const ops::QuantWeight* q = c.params.quant(w))  // inference: GGUF blocks
    return ops::quant_linear_forward(c.stream(), c.alloc, out, inp, *q, bias, N);
  if (const ops::Nf4Weight* q = c.params.nf4(w)) {
    Tensor buf;
    const float* x = nf4_operand(c, inp, N * IC, buf);
    return ops::nf4_linear_forward(c.stream(), c.alloc, out, x, *q, bias, N, nf4_round(c));
  }
  if (c.matmul == nullptr)
    return ops::linear_forward(c.stream(), out, inp, c.params.value(w), bias, N, IC, OC);
  matmul_weight(c, false, true, N, OC, IC, inp, IC, w, c.params.value(w), IC, 0.0f, out, OC);
  if (bias != nullptr) ops::add_bias_rows(c.stream(), out, bias, N, OC);
}

void linear_forward_parts(const LayerContext& c, const float* inp, int64_t N, int64_t IC,
                          std::span<const LinearPart> parts) {
  constexpr size_t kMaxParts = 4;
  const bool quantized =
      std::ranges::any_of(parts, [&](const LinearPart& p) { return c.params.quantized(p.w.index); });
  if (quantized || !ops::skinny_fits(c.stream(), false, true, N) || parts.size() > kMaxParts || IC <= 0) {
    for (const LinearPart& p : parts) linear_forward(c, p.out, inp, p.w, p.bias, N, IC, p.OC);
    return;
  }
  ops::SkinnyPart sk[kMaxParts];
  for (size_t i = 0; i < parts.size(); ++i) {
    const LinearPart& p = parts[i];
    const void* w = c.matmul == nullptr ? static_cast<const void*>(c.params.value(p.w))
                                        : static_cast<const void*>(c.matmul->weight(c.params, p.w));
    sk[i] = {w, p.OC, IC, p.out, p.OC};
  }
  const auto n_parts = static_cast<int64_t>(parts.size());
  if (c.matmul == nullptr) {
    ops::skinny_gemm_nt_parts(c.stream(), N, IC, inp, IC, sk, n_parts);
  } else {  // the rounded rows, as matmul_weight makes them
    Tensor a = c.workspace({N, IC});
    ops::copy(c.stream(), a.data<float>(), inp, static_cast<size_t>(N * IC) * sizeof(float));
    ops::round_inplace(c.stream(), a.data<float>(), N * IC, c.matmul->type());
    ops::skinny_gemm_nt_parts_lowp(c.stream(), N, IC, a.data<float>(), IC, sk, n_parts,
                                   c.matmul->type());
  }
  for (const LinearPart& p : parts) {  // as ops::linear_forward adds it
    if (p.bias != nullptr) ops::add_bias_rows(c.stream(), p.out, p.bias, N, p.OC);
  }
}

void linear_backward(const LayerContext& c, float* dinp, float* dweight, float* dbias,
                     const float* dout, const float* inp, ParamRef w, int64_t N, int64_t IC,
                     int64_t OC) {
  if (const ops::Nf4Weight* q = c.params.nf4(w)) {  // frozen: the input gradient only
    PX_CHECK(dweight == nullptr, "'{}' is a frozen NF4 weight: it has no gradient",
             c.params.spec(w.index).name);
    if (dinp != nullptr) {
      Tensor buf;
      const float* d = nf4_operand(c, dout, N * OC, buf);
      ops::nf4_linear_backward_input(c.stream(), c.alloc, dinp, d, *q, N, nf4_round(c));
    }
    if (dbias != nullptr)
      ops::linear_backward(c.stream(), nullptr, nullptr, dbias, dout, inp, nullptr, N, IC, OC);
    return;
  }
  if (c.matmul == nullptr)
    return ops::linear_backward(c.stream(), dinp, dweight, dbias, dout, inp, c.params.value(w), N,
                                IC, OC);
  // The gradient flowing back is rounded once; under fp16 a value beyond
  // 65504 becomes Inf here, which the loss scaler then sees.
  Tensor d = rounded(c, dout, N * OC);
  if (dinp != nullptr)
    ops::lowp_gemm(c.stream(), c.matmul->gemm(), false, false, N, IC, OC, d.half_bits(), OC,
                   c.matmul->weight(c.params, w), IC, 1.0f, dinp, IC, c.alloc);
  if (dweight != nullptr) {
    Tensor x = rounded(c, inp, N * IC);
    ops::lowp_gemm(c.stream(), c.matmul->gemm(), true, false, OC, IC, N, d.half_bits(), OC,
                   x.half_bits(), IC, 1.0f, dweight, IC, c.alloc);
  }
  // The bias gradient: the f32 kernel's fixed-order row sum.
  if (dbias != nullptr)
    ops::linear_backward(c.stream(), nullptr, nullptr, dbias, dout, inp, nullptr, N, IC, OC);
}

}  // namespace parallm
