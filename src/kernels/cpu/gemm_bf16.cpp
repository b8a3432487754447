// 16-bit GEMM: oneDNN bf16 matmul primitives keyed by (transposes, shape,
// leading dimensions, beta), or widening to f32 and dnnl_sgemm. Invariant:
// both paths see exactly the same 16-bit inputs; beta 1 accumulates into C.
#include "kernels/cpu/gemm_bf16.h"

#include <oneapi/dnnl/dnnl.hpp>
#if defined(__F16C__) || defined(__AVX512F__)
// GCC 12's AVX-512 intrinsics pass _mm512_undefined_epi32() as the unused
// merge source and then warn that it "may be used uninitialized" (GCC bug
// 105593, fixed in 13); the warning is about its header, not this code.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#endif

#include <algorithm>
#include <map>
#include <tuple>

#include "base/error.h"
#include "kernels/cpu/cpu_isa.h"
#include "kernels/cpu/matmul.h"
#include "tensor/half.h"
#include "tensor/tensor.h"

namespace parallm::cpu {

namespace {
constexpr int64_t kBlock = 8;  // F16C converts 8 values per instruction
// Emulated forward GEMM: f32 bytes of W widened at a time (within L2).
constexpr int64_t kWidenBlockBytes = 512 << 10;

// Blocks of 8 through F16C where the build has it (IEEE round to nearest
// even, overflow to Inf, like tensor/half.h's scalar code), the tail scalar.
void f32_to_f16_block(uint16_t* dst, const float* src, int64_t n) {
  int64_t i = 0;
#if defined(__F16C__)
  for (; i + kBlock <= n; i += kBlock)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
#endif
  for (; i < n; ++i) dst[i] = f32_to_f16(src[i]);
}

void f16_to_f32_block(float* dst, const uint16_t* src, int64_t n) {
  int64_t i = 0;
#if defined(__F16C__)
  for (; i + kBlock <= n; i += kBlock)
    _mm256_storeu_ps(dst + i,
                     _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
#endif
  for (; i < n; ++i) dst[i] = f16_to_f32(src[i]);
}

// bf16 in blocks of 16 with AVX-512 where built with it and the ISA cap
// allows it: the same integer rounding as tensor/half.h's f32_to_bf16
// (nearest even, NaN kept quiet), so the bits equal the scalar code's for
// every input, subnormals included.
void f32_to_bf16_block(uint16_t* dst, const float* src, int64_t n) {
  int64_t i = 0;
#if defined(__AVX512F__)
  const int64_t n16 = cpu_isa_has(CpuIsa::kAvx512Core) ? n : 0;
  const __m512i abs_mask = _mm512_set1_epi32(0x7fffffff), inf = _mm512_set1_epi32(0x7f800000);
  const __m512i one = _mm512_set1_epi32(1), half = _mm512_set1_epi32(0x7fff);
  const __m512i quiet = _mm512_set1_epi32(0x40);
  for (; i + 16 <= n16; i += 16) {
    const __m512i u = _mm512_loadu_si512(src + i);
    const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, abs_mask), inf);
    const __m512i hi = _mm512_srli_epi32(u, 16);
    const __m512i lsb = _mm512_and_si512(hi, one);
    __m512i r = _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(half, lsb)), 16);
    r = _mm512_mask_blend_epi32(nan, r, _mm512_or_si512(hi, quiet));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), _mm512_cvtepi32_epi16(r));
  }
#endif
  for (; i < n; ++i) dst[i] = f32_to_bf16(src[i]);
}

void bf16_to_f32_block(float* dst, const uint16_t* src, int64_t n) {
  int64_t i = 0;
#if defined(__AVX512F__)
  const int64_t n16 = cpu_isa_has(CpuIsa::kAvx512Core) ? n : 0;
  for (; i + 16 <= n16; i += 16) {
    const __m512i h =
        _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i)));
    _mm512_storeu_si512(dst + i, _mm512_slli_epi32(h, 16));
  }
#endif
  for (; i < n; ++i) dst[i] = bf16_to_f32(src[i]);
}

// Splits n elements into chunks of whole blocks over the OpenMP threads.
template <class F>
void for_chunks(int64_t n, F&& f) {
  constexpr int64_t kChunk = 1 << 14;
  const int64_t chunks = (n + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static) if (chunks > 4)
  for (int64_t c = 0; c < chunks; ++c) f(c * kChunk, std::min(kChunk, n - c * kChunk));
}
}  // namespace

void round_to_lowp(uint16_t* dst, const float* src, int64_t n, LowpType t) {
  if (t == LowpType::BF16) {
    for_chunks(n, [&](int64_t i0, int64_t len) { f32_to_bf16_block(dst + i0, src + i0, len); });
  } else {
    for_chunks(n, [&](int64_t i0, int64_t len) { f32_to_f16_block(dst + i0, src + i0, len); });
  }
}

void widen_lowp(float* dst, const uint16_t* src, int64_t n, LowpType t) {
  if (t == LowpType::BF16) {
    for_chunks(n, [&](int64_t i0, int64_t len) { bf16_to_f32_block(dst + i0, src + i0, len); });
  } else {
    for_chunks(n, [&](int64_t i0, int64_t len) { f16_to_f32_block(dst + i0, src + i0, len); });
  }
}

void round_inplace(float* x, int64_t n, LowpType t) {
  if (t == LowpType::BF16) {
#pragma omp parallel for schedule(static) if (n > 65536)
    for (int64_t i = 0; i < n; ++i) x[i] = bf16_to_f32(f32_to_bf16(x[i]));
  } else {
    for_chunks(n, [&](int64_t i0, int64_t len) {
      uint16_t h[kBlock * 64];
      for (int64_t j = 0; j < len; j += kBlock * 64) {
        const int64_t m = std::min<int64_t>(kBlock * 64, len - j);
        f32_to_f16_block(h, x + i0 + j, m);
        f16_to_f32_block(x + i0 + j, h, m);
      }
    });
  }
}

bool cpu_has_avx512_bf16() { return cpu_isa_has(CpuIsa::kAvx512CoreBf16); }

struct LowpGemm::Cache {
  using Key = std::tuple<bool, bool, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, bool>;
  struct Entry {
    dnnl::memory::desc a, b, c;
    dnnl::matmul prim;
  };
  dnnl::engine eng{dnnl::engine::kind::cpu, 0};
  dnnl::stream strm{eng};
  std::map<Key, Entry> prims;
  std::string impl;  // implementation of the first primitive built
};

LowpGemm::LowpGemm(LowpType t, bool allow_native)
    : type_(t), native_(allow_native && t == LowpType::BF16 && cpu_has_avx512_bf16()) {
  if (native_) cache_ = std::make_unique<Cache>();
}

LowpGemm::~LowpGemm() = default;

std::string LowpGemm::backend() const {
  const char* name = type_ == LowpType::BF16 ? "bf16" : "fp16";
  if (!native_)
    return std::string("emulated ") + name + ": inputs rounded to " + name + ", f32 dnnl_sgemm" +
           (type_ == LowpType::BF16 ? " (no AVX512-BF16, or native disabled)"
                                    : " (no AVX512-FP16 GEMM on this CPU)");
  return "oneDNN bf16 matmul, f32 accumulation" +
         (cache_->impl.empty() ? std::string() : " (" + cache_->impl + ")");
}

void LowpGemm::gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const uint16_t* A,
                    int64_t lda, const uint16_t* B, int64_t ldb, float beta, float* C, int64_t ldc,
                    Allocator& scratch) const {
  PX_CHECK(beta == 0.0f || beta == 1.0f, "LowpGemm: beta must be 0 or 1, got {}", beta);
  if (M <= 0 || N <= 0) return;
  if (K > 0 && !native_ && !trans_a && trans_b) {
    // The layers' forward (B = W, (N, K) rows): widen W a block of rows at a
    // time into a buffer that stays in cache, instead of a whole f32 copy of
    // W per call (4 bytes written and read again per weight).
    Tensor a = Tensor::zeros(scratch, {M * lda}, DType::F32, MemTag::Workspace);
    widen_lowp(a.data<float>(), A, M * lda, type_);
    const int64_t rows = std::clamp<int64_t>(kWidenBlockBytes / (4 * ldb), 1, N);
    Tensor b = Tensor::zeros(scratch, {rows * ldb}, DType::F32, MemTag::Workspace);
    for (int64_t n0 = 0; n0 < N; n0 += rows) {
      const int64_t nb = std::min(rows, N - n0);
      widen_lowp(b.data<float>(), B + n0 * ldb, nb * ldb, type_);
      cpu::gemm<float>(false, true, M, nb, K, 1.0f, a.data<float>(), lda, b.data<float>(), ldb,
                       beta, C + n0, ldc);
    }
    return;
  }
  if (K <= 0 || !native_) {
    // Widen exactly and reuse the f32 GEMM: the same products, f32 sums.
    const int64_t a_rows = trans_a ? K : M, b_rows = trans_b ? N : K;
    Tensor a =
        Tensor::zeros(scratch, {std::max<int64_t>(a_rows * lda, 1)}, DType::F32, MemTag::Workspace);
    Tensor b =
        Tensor::zeros(scratch, {std::max<int64_t>(b_rows * ldb, 1)}, DType::F32, MemTag::Workspace);
    if (K > 0) {
      widen_lowp(a.data<float>(), A, a_rows * lda, type_);
      widen_lowp(b.data<float>(), B, b_rows * ldb, type_);
    }
    cpu::gemm<float>(trans_a, trans_b, M, N, K, 1.0f, a.data<float>(), lda, b.data<float>(), ldb,
                     beta, C, ldc);
    return;
  }
  using dnnl::memory;
  const Cache::Key key{trans_a, trans_b, M, N, K, lda, ldb, ldc, beta != 0.0f};
  auto it = cache_->prims.find(key);
  if (it == cache_->prims.end()) {
    Cache::Entry e;
    // Strides describe the row-major storage of op(A) (M, K) and op(B) (K, N).
    e.a = memory::desc({M, K}, memory::data_type::bf16,
                       trans_a ? memory::dims{1, lda} : memory::dims{lda, 1});
    e.b = memory::desc({K, N}, memory::data_type::bf16,
                       trans_b ? memory::dims{1, ldb} : memory::dims{ldb, 1});
    e.c = memory::desc({M, N}, memory::data_type::f32, memory::dims{ldc, 1});
    dnnl::primitive_attr attr;
    if (beta != 0.0f) {
      dnnl::post_ops po;
      po.append_sum(1.0f);
      attr.set_post_ops(po);
    }
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(e.a, e.b, e.c), attr, cache_->eng);
    if (cache_->impl.empty()) cache_->impl = pd.impl_info_str();
    e.prim = dnnl::matmul(pd);
    it = cache_->prims.emplace(key, std::move(e)).first;
  }
  const Cache::Entry& e = it->second;
  memory a(e.a, cache_->eng, const_cast<uint16_t*>(A));
  memory b(e.b, cache_->eng, const_cast<uint16_t*>(B));
  memory c(e.c, cache_->eng, C);
  it->second.prim.execute(cache_->strm,
                          {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, c}});
  cache_->strm.wait();
}

}  // namespace parallm::cpu
