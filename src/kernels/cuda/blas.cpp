// cuBLASLt GEMMs and the linear layer (blas.h). cuBLASLt is column-major: a
// row-major C (M, N) is the column-major C^T (N, M) = op(B)^T op(A)^T, so every
// call swaps the operands (A' = B, B' = A) and keeps each transpose flag.
#include "kernels/cuda/blas.h"

#include <cublasLt.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <type_traits>

#include "base/error.h"
#include "kernels/cuda/blas_epilogue.h"
#include "kernels/cuda/blas_impl.h"
#include "kernels/cuda/cuda_check.h"

namespace parallm::cuda {

// A problem's shape, types, epilogue and operand alignments: what the
// heuristic's choice depends on.
using AlgoKey = std::array<int64_t, 19>;

struct Blas::Impl {
  cublasLtHandle_t handle = nullptr;
  void* workspace = nullptr;
  int device = 0;
  // The heuristic's answer per problem (nullopt: no algorithm), asked once:
  // the query costs tens of microseconds, as much as a small GEMM.
  std::map<AlgoKey, std::optional<cublasLtMatmulAlgo_t>> algos;
};

namespace {

void check_lt(cublasStatus_t st, const char* call, const char* file, int line) {
  if (st != CUBLAS_STATUS_SUCCESS)
    fail_call("cuBLASLt", static_cast<int>(st), cublasLtGetStatusString(st), call, file, line);
}
#define PX_LT(call) check_lt((call), #call, __FILE__, __LINE__)

class MatmulDesc {
 public:
  explicit MatmulDesc(cublasComputeType_t compute) {
    PX_LT(cublasLtMatmulDescCreate(&d_, compute, CUDA_R_32F));
  }
  ~MatmulDesc() { cublasLtMatmulDescDestroy(d_); }
  MatmulDesc(const MatmulDesc&) = delete;
  MatmulDesc& operator=(const MatmulDesc&) = delete;
  template <class V>
  void set(cublasLtMatmulDescAttributes_t attr, const V& v) {
    PX_LT(cublasLtMatmulDescSetAttribute(d_, attr, &v, sizeof(v)));
  }
  cublasLtMatmulDesc_t get() const { return d_; }

 private:
  cublasLtMatmulDesc_t d_ = nullptr;
};

class Layout {
 public:
  Layout(cudaDataType type, int64_t rows, int64_t cols, int64_t ld) {
    PX_LT(cublasLtMatrixLayoutCreate(&l_, type, static_cast<uint64_t>(rows),
                                     static_cast<uint64_t>(cols), ld));
  }
  ~Layout() { cublasLtMatrixLayoutDestroy(l_); }
  Layout(const Layout&) = delete;
  Layout& operator=(const Layout&) = delete;
  cublasLtMatrixLayout_t get() const { return l_; }

 private:
  cublasLtMatrixLayout_t l_ = nullptr;
};

class Preference {
 public:
  Preference() { PX_LT(cublasLtMatmulPreferenceCreate(&p_)); }
  ~Preference() { cublasLtMatmulPreferenceDestroy(p_); }
  Preference(const Preference&) = delete;
  Preference& operator=(const Preference&) = delete;
  template <class V>
  void set(cublasLtMatmulPreferenceAttributes_t attr, const V& v) {
    PX_LT(cublasLtMatmulPreferenceSetAttribute(p_, attr, &v, sizeof(v)));
  }
  cublasLtMatmulPreference_t get() const { return p_; }

 private:
  cublasLtMatmulPreference_t p_ = nullptr;
};

template <class T>
constexpr cudaDataType data_type();
template <>
constexpr cudaDataType data_type<float>() {
  return CUDA_R_32F;
}
template <>
constexpr cudaDataType data_type<__nv_bfloat16>() {
  return CUDA_R_16BF;
}

// The largest power of two up to 256 dividing the address: the heuristic
// otherwise assumes 256-byte aligned operands (views into a buffer are not).
uint32_t alignment_of(const void* p) {
  auto a = reinterpret_cast<uintptr_t>(p);
  uint32_t al = 256;
  while (al > 1 && a % al != 0) al /= 2;
  return al;
}

// A column-major problem D = C = alpha * op(A) op(B) + beta * C, (m, n), with
// an optional epilogue.
struct Problem {
  bool ta = false, tb = false;
  int64_t m = 0, n = 0, k = 0;
  float alpha = 1.f, beta = 0.f;
  const void* A = nullptr;
  int64_t lda = 0;
  const void* B = nullptr;
  int64_t ldb = 0;
  void* C = nullptr;
  int64_t ldc = 0;
  cudaDataType ab = CUDA_R_32F, cd = CUDA_R_32F;
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  const void* bias = nullptr;  // length m, type cd
  void* aux = nullptr;         // GELU input (m, n), leading dimension aux_ld, type cd
  int64_t aux_ld = 0;
};

// Runs p; false only when cuBLASLt offers no algorithm for it (the caller then
// takes an unfused path). Errors of any other kind throw.
bool run(Blas& blas, const Problem& p, cudaStream_t s) {
  if (p.m == 0 || p.n == 0) return true;
  if (p.k == 0) {  // cuBLASLt wants k >= 1; op(A) op(B) is then all zeros
    if (p.epilogue != CUBLASLT_EPILOGUE_DEFAULT) return false;
    if (p.cd == CUDA_R_32F)
      scale_matrix(static_cast<float*>(p.C), p.beta, p.n, p.m, p.ldc, s);
    else
      scale_matrix(static_cast<__nv_bfloat16*>(p.C), p.beta, p.n, p.m, p.ldc, s);
    return true;
  }
  Blas::Impl& impl = blas.impl();
  const bool tf32 = blas.allow_tf32() && p.ab == CUDA_R_32F;
  MatmulDesc desc(tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F);
  desc.set(CUBLASLT_MATMUL_DESC_TRANSA, p.ta ? CUBLAS_OP_T : CUBLAS_OP_N);
  desc.set(CUBLASLT_MATMUL_DESC_TRANSB, p.tb ? CUBLAS_OP_T : CUBLAS_OP_N);
  desc.set(CUBLASLT_MATMUL_DESC_EPILOGUE, p.epilogue);
  if (p.bias != nullptr) desc.set(CUBLASLT_MATMUL_DESC_BIAS_POINTER, p.bias);
  if (p.aux != nullptr) {
    desc.set(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, p.aux);
    desc.set(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, p.aux_ld);
  }
  // Stored shapes: op(A) is (m, k), op(B) is (k, n).
  Layout a(p.ab, p.ta ? p.k : p.m, p.ta ? p.m : p.k, p.lda);
  Layout b(p.ab, p.tb ? p.n : p.k, p.tb ? p.k : p.n, p.ldb);
  Layout c(p.cd, p.m, p.n, p.ldc);
  const bool fused = p.epilogue != CUBLASLT_EPILOGUE_DEFAULT;
  const AlgoKey key = {p.m,
                       p.n,
                       p.k,
                       p.lda,
                       p.ldb,
                       p.ldc,
                       p.ta,
                       p.tb,
                       static_cast<int64_t>(p.ab),
                       static_cast<int64_t>(p.cd),
                       static_cast<int64_t>(p.epilogue),
                       tf32,
                       alignment_of(p.A),
                       alignment_of(p.B),
                       alignment_of(p.C),
                       p.bias != nullptr,
                       alignment_of(p.bias),
                       alignment_of(p.aux),
                       p.aux_ld};
  auto it = impl.algos.find(key);
  if (it == impl.algos.end()) {
    Preference pref;
    pref.set(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
             static_cast<uint64_t>(Blas::kWorkspaceBytes));
    pref.set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, alignment_of(p.A));
    pref.set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, alignment_of(p.B));
    pref.set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, alignment_of(p.C));
    pref.set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, alignment_of(p.C));
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    cublasStatus_t st =
        cublasLtMatmulAlgoGetHeuristic(impl.handle, desc.get(), a.get(), b.get(), c.get(), c.get(),
                                       pref.get(), 1, &result, &found);
    // "No algorithm" is remembered; a fused epilogue cuBLASLt refuses, whatever
    // status it names, counts as none (it runs unfused); other errors throw.
    std::optional<cublasLtMatmulAlgo_t> algo;
    if (st == CUBLAS_STATUS_SUCCESS && found > 0)
      algo = result.algo;
    else if (st != CUBLAS_STATUS_SUCCESS && st != CUBLAS_STATUS_NOT_SUPPORTED && !fused)
      PX_LT(st);
    it = impl.algos.emplace(key, algo).first;
  }
  if (!it->second) return false;
  const cublasStatus_t st =
      cublasLtMatmul(impl.handle, desc.get(), &p.alpha, p.A, a.get(), p.B, b.get(), &p.beta, p.C,
                     c.get(), p.C, c.get(), &*it->second, impl.workspace, Blas::kWorkspaceBytes, s);
  if (fused && (st == CUBLAS_STATUS_NOT_SUPPORTED || st == CUBLAS_STATUS_INVALID_VALUE))
    return false;  // refused before launching anything
  PX_LT(st);
  return true;
}

}  // namespace

void row_major_gemm(Blas& blas, cudaDataType ab, cudaDataType cd, bool trans_a, bool trans_b,
                    int64_t M, int64_t N, int64_t K, float alpha, const void* A, int64_t lda,
                    const void* B, int64_t ldb, float beta, void* C, int64_t ldc, cudaStream_t s) {
  PX_CHECK(M >= 0 && N >= 0 && K >= 0, "cuda::gemm: negative size M={} N={} K={}", M, N, K);
  if (M == 0 || N == 0) return;
  const int64_t a_cols = trans_a ? M : K, b_cols = trans_b ? K : N;
  PX_CHECK(lda >= std::max<int64_t>(a_cols, 1) && ldb >= std::max<int64_t>(b_cols, 1) && ldc >= N,
           "cuda::gemm: leading dimensions lda={} ldb={} ldc={} too small for M={} N={} K={} "
           "trans_a={} trans_b={}",
           lda, ldb, ldc, M, N, K, trans_a, trans_b);
  Problem p;
  p.ta = trans_b;
  p.tb = trans_a;
  p.m = N;
  p.n = M;
  p.k = K;
  p.alpha = alpha;
  p.beta = beta;
  p.A = B;
  p.lda = ldb;
  p.B = A;
  p.ldb = lda;
  p.C = C;
  p.ldc = ldc;
  p.ab = ab;
  p.cd = cd;
  PX_CHECK(run(blas, p, s),
           "cuBLASLt has no GEMM algorithm for M={} N={} K={} lda={} ldb={} ldc={} trans_a={} "
           "trans_b={}",
           M, N, K, lda, ldb, ldc, trans_a, trans_b);
}

Blas::Blas(bool allow_tf32) : allow_tf32_(allow_tf32), impl_(std::make_unique<Impl>()) {
  PX_CUDA(cudaGetDevice(&impl_->device));
  PX_LT(cublasLtCreate(&impl_->handle));
  cudaError_t e = cudaMalloc(&impl_->workspace, kWorkspaceBytes);
  if (e != cudaSuccess) {
    cublasLtDestroy(impl_->handle);
    PX_CUDA(e);
  }
}

Blas::~Blas() {
  cudaFree(impl_->workspace);  // waits for the GEMMs still using it
  cublasLtDestroy(impl_->handle);
}

int Blas::device() const { return impl_->device; }

template <class T>
void gemm(Blas& b, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
          const T* A, int64_t lda, const T* B, int64_t ldb, float beta, T* C, int64_t ldc,
          cudaStream_t s) {
  row_major_gemm(b, data_type<T>(), data_type<T>(), trans_a, trans_b, M, N, K, alpha, A, lda, B,
                 ldb, beta, C, ldc, s);
}

template <class T>
void linear_forward(Blas& b, T* out, T* pre_gelu, const T* inp, const T* weight, const T* bias,
                    int64_t N, int64_t IC, int64_t OC, Epilogue ep, cudaStream_t s) {
  PX_CHECK(N >= 0 && IC >= 0 && OC >= 0, "cuda::linear_forward: negative size N={} IC={} OC={}", N,
           IC, OC);
  if (N == 0 || OC == 0) return;
  const bool gelu = ep == Epilogue::Gelu;
  // Column-major: out^T (OC, N) = weight (OC, IC; stored as its transpose) * inp^T (IC, N),
  // so the bias runs along the rows of D, as cuBLASLt's epilogue adds it.
  Problem p;
  p.ta = true;
  p.tb = false;
  p.m = OC;
  p.n = N;
  p.k = IC;
  p.A = weight;
  p.lda = std::max<int64_t>(IC, 1);
  p.B = inp;
  p.ldb = std::max<int64_t>(IC, 1);
  p.C = out;
  p.ldc = OC;
  p.ab = p.cd = data_type<T>();
  p.bias = bias;
  // The GELU input matrix of the fused epilogue needs a leading dimension
  // divisible by 8 and a 16-byte aligned buffer; other cases run unfused.
  // fp32 runs GELU unfused too: the epilogue's tanh is an approximation
  // (measured 6e-6 off on an H200), far below bf16's rounding but not within
  // the 1e-5 that fp32 GPU runs are held to against the CPU.
  const bool aux_ok = (pre_gelu == nullptr || (OC % 8 == 0 && alignment_of(pre_gelu) >= 16)) &&
                      !(gelu && std::is_same_v<T, float>);
  if (!gelu)
    p.epilogue = bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
  else if (pre_gelu == nullptr)
    p.epilogue = bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU;
  else
    p.epilogue = bias ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS : CUBLASLT_EPILOGUE_GELU_AUX;
  if (gelu && pre_gelu != nullptr) {
    p.aux = pre_gelu;
    p.aux_ld = OC;
  }
  if (aux_ok && p.epilogue != CUBLASLT_EPILOGUE_DEFAULT && run(b, p, s)) return;
  // Unfused: the plain GEMM into the pre-activation (or out), then bias and GELU.
  T* target = gelu && pre_gelu != nullptr ? pre_gelu : out;
  p.C = target;
  p.epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  p.bias = nullptr;
  p.aux = nullptr;
  p.aux_ld = 0;
  PX_CHECK(run(b, p, s), "cuBLASLt has no GEMM algorithm for linear N={} IC={} OC={}", N, IC, OC);
  if (bias != nullptr || gelu)
    bias_act(out, gelu ? pre_gelu : static_cast<T*>(nullptr), target, bias, N, OC, gelu, s);
}

template <class T>
void linear_backward(Blas& b, T* dinp, float* dweight, float* dbias, const T* dout, const T* inp,
                     const T* weight, int64_t N, int64_t IC, int64_t OC, cudaStream_t s) {
  PX_CHECK(N >= 0 && IC >= 0 && OC >= 0, "cuda::linear_backward: negative size N={} IC={} OC={}", N,
           IC, OC);
  const int64_t ld_out = std::max<int64_t>(OC, 1), ld_in = std::max<int64_t>(IC, 1);
  if (dinp != nullptr)  // (N, IC) += dout (N, OC) * weight (OC, IC)
    row_major_gemm(b, data_type<T>(), data_type<T>(), false, false, N, IC, OC, 1.f, dout, ld_out,
                   weight, ld_in, 1.f, dinp, ld_in, s);
  if (dweight != nullptr)  // (OC, IC) += dout^T (OC, N) * inp (N, IC), fp32 accumulator
    row_major_gemm(b, data_type<T>(), CUDA_R_32F, true, false, OC, IC, N, 1.f, dout, ld_out, inp,
                   ld_in, 1.f, dweight, ld_in, s);
  if (dbias != nullptr)  // the GEMMs before it on this stream are done with the workspace
    bias_grad(dbias, dout, N, OC, static_cast<float*>(b.impl().workspace),
              static_cast<int64_t>(Blas::kWorkspaceBytes / sizeof(float)), s);
}

template <class T>
void linear_backward_gelu(Blas& b, T* dpre, const T* pre, float* dweight, float* dbias,
                          const T* dout, const T* inp, const T* weight, int64_t N, int64_t IC,
                          int64_t OC, cudaStream_t s) {
  PX_CHECK(N >= 0 && IC >= 0 && OC >= 0,
           "cuda::linear_backward_gelu: negative size N={} IC={} OC={}", N, IC, OC);
  const int64_t n = N * IC;
  if (n > 0) {
    PX_CHECK(dpre != nullptr && pre != nullptr,
             "cuda::linear_backward_gelu: dpre and pre are required (N={} IC={})", N, IC);
    const auto d0 = reinterpret_cast<uintptr_t>(dpre), p0 = reinterpret_cast<uintptr_t>(pre);
    const auto bytes = static_cast<uintptr_t>(n) * sizeof(T);
    PX_CHECK(d0 + bytes <= p0 || p0 + bytes <= d0,
             "cuda::linear_backward_gelu: dpre overlaps pre (the GEMM would overwrite the GELU "
             "input before it is read)");
    // Column-major: dpre^T (IC, N) = weight^T (IC, OC; weight stored row-major
    // (OC, IC) is exactly that) * dout^T (OC, N); pre^T (IC, N) is the GELU
    // input with the same layout as D, as the forward's GELU_AUX wrote it.
    Problem p;
    p.ta = false;
    p.tb = false;
    p.m = IC;
    p.n = N;
    p.k = OC;
    p.alpha = 1.f;
    p.beta = 0.f;
    p.A = weight;
    p.lda = IC;
    p.B = dout;
    p.ldb = std::max<int64_t>(OC, 1);
    p.C = dpre;
    p.ldc = IC;
    p.ab = p.cd = data_type<T>();
    // The epilogue's GELU input needs a leading dimension divisible by 8 and
    // a 16-byte aligned buffer. fp32 stays unfused, as in linear_forward: the
    // epilogue's tanh approximation is not within fp32's 1e-5 of the CPU.
    const bool fuse =
        std::is_same_v<T, __nv_bfloat16> && IC % 8 == 0 && alignment_of(pre) >= 16 && OC > 0;
    bool done = false;
    if (fuse) {
      p.epilogue = CUBLASLT_EPILOGUE_DGELU;
      p.aux = const_cast<T*>(pre);  // read only: DGELU takes the GELU input
      p.aux_ld = IC;
      done = run(b, p, s);
    }
    if (!done) {  // the plain GEMM (beta 0 writes dpre), then the GELU gradient in place
      p.epilogue = CUBLASLT_EPILOGUE_DEFAULT;
      p.aux = nullptr;
      p.aux_ld = 0;
      PX_CHECK(run(b, p, s),
               "cuBLASLt has no GEMM algorithm for linear_backward_gelu N={} IC={} OC={}", N, IC,
               OC);
      gelu_grad_mul(dpre, pre, n, s);
    }
  }
  // The layer's own weight and bias gradients, as linear_backward computes them.
  linear_backward<T>(b, nullptr, dweight, dbias, dout, inp, weight, N, IC, OC, s);
}

template void gemm<float>(Blas&, bool, bool, int64_t, int64_t, int64_t, float, const float*,
                          int64_t, const float*, int64_t, float, float*, int64_t, cudaStream_t);
template void gemm<__nv_bfloat16>(Blas&, bool, bool, int64_t, int64_t, int64_t, float,
                                  const __nv_bfloat16*, int64_t, const __nv_bfloat16*, int64_t,
                                  float, __nv_bfloat16*, int64_t, cudaStream_t);
template void linear_forward<float>(Blas&, float*, float*, const float*, const float*, const float*,
                                    int64_t, int64_t, int64_t, Epilogue, cudaStream_t);
template void linear_forward<__nv_bfloat16>(Blas&, __nv_bfloat16*, __nv_bfloat16*,
                                            const __nv_bfloat16*, const __nv_bfloat16*,
                                            const __nv_bfloat16*, int64_t, int64_t, int64_t,
                                            Epilogue, cudaStream_t);
template void linear_backward<float>(Blas&, float*, float*, float*, const float*, const float*,
                                     const float*, int64_t, int64_t, int64_t, cudaStream_t);
template void linear_backward<__nv_bfloat16>(Blas&, __nv_bfloat16*, float*, float*,
                                             const __nv_bfloat16*, const __nv_bfloat16*,
                                             const __nv_bfloat16*, int64_t, int64_t, int64_t,
                                             cudaStream_t);
template void linear_backward_gelu<float>(Blas&, float*, const float*, float*, float*, const float*,
                                          const float*, const float*, int64_t, int64_t, int64_t,
                                          cudaStream_t);
template void linear_backward_gelu<__nv_bfloat16>(Blas&, __nv_bfloat16*, const __nv_bfloat16*,
                                                  float*, float*, const __nv_bfloat16*,
                                                  const __nv_bfloat16*, const __nv_bfloat16*,
                                                  int64_t, int64_t, int64_t, cudaStream_t);

}  // namespace parallm::cuda
