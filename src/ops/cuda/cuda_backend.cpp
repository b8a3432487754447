// CudaBackend (cuda_backend.h): each op is the fp32 instance of its CUDA
// kernel on this backend's stream.
#include "ops/cuda/cuda_backend.h"

#include <algorithm>

#include "base/error.h"
#include "kernels/cuda/activation.h"
#include "kernels/cuda/attention.h"
#include "kernels/cuda/attention_merge.h"
#include "kernels/cuda/blas.h"
#include "kernels/cuda/blas_epilogue.h"
#include "kernels/cuda/convert.h"
#include "kernels/cuda/cross_entropy.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/embedding.h"
#include "kernels/cuda/norm.h"
#include "kernels/cuda/optimizer.h"
#include "kernels/cuda/paged_attention.h"
#include "kernels/cuda/rope.h"

namespace parallm::ops {

CudaBackend::CudaBackend(cudaStream_t stream, cuda::Blas& blas, MemoryResource& memory)
    : stream_(stream), blas_(&blas), memory_(&memory) {}

CudaBackend::~CudaBackend() { memory_->release(scratch_, scratch_bytes_); }

void* CudaBackend::scratch(size_t bytes) const {
  bytes = std::max<size_t>(bytes, 256);  // kernels refuse a null scratch, even when empty
  if (bytes <= scratch_bytes_) return scratch_;
  // The stream still owns the old buffer's queued uses; the memory gives a
  // released block only to later work on this same stream.
  memory_->release(scratch_, scratch_bytes_);
  scratch_ = memory_->allocate(bytes);
  PX_CHECK(scratch_ != nullptr, "cuda: out of device memory for {} bytes of kernel scratch", bytes);
  scratch_bytes_ = bytes;
  return scratch_;
}

void CudaBackend::copy_to_device(void* dst, const void* host_src, size_t bytes) const {
  if (bytes != 0) PX_CUDA(cudaMemcpyAsync(dst, host_src, bytes, cudaMemcpyHostToDevice, stream_));
}

void CudaBackend::copy_to_host(void* host_dst, const void* src, size_t bytes) const {
  if (bytes == 0) return;
  PX_CUDA(cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDeviceToHost, stream_));
  synchronize();
}

void CudaBackend::copy(void* dst, const void* src, size_t bytes) const {
  if (bytes != 0) PX_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_));
}

void CudaBackend::zero(void* dst, size_t bytes) const {
  if (bytes != 0) PX_CUDA(cudaMemsetAsync(dst, 0, bytes, stream_));
}

void CudaBackend::fill(float* dst, int64_t n, float value) const {
  cuda::fill(dst, value, n, stream_);
}

void CudaBackend::synchronize() const { PX_CUDA(cudaStreamSynchronize(stream_)); }

void CudaBackend::gelu_forward(float* out, const float* inp, int64_t n) const {
  cuda::gelu_forward<float>(out, inp, n, stream_);
}
void CudaBackend::gelu_backward(float* dinp, const float* inp, const float* dout, int64_t n) const {
  cuda::gelu_backward<float>(dinp, inp, dout, n, stream_);
}
void CudaBackend::swiglu_forward(float* out, const float* gate, const float* up, int64_t n) const {
  cuda::swiglu_forward<float>(out, gate, up, n, stream_);
}
void CudaBackend::swiglu_backward(float* dgate, float* dup, const float* dout, const float* gate,
                                  const float* up, int64_t n) const {
  cuda::swiglu_backward<float>(dgate, dup, dout, gate, up, n, stream_);
}
void CudaBackend::geglu_forward(float* out, const float* gate, const float* up, int64_t n) const {
  cuda::geglu_forward<float>(out, gate, up, n, stream_);
}
void CudaBackend::geglu_backward(float* dgate, float* dup, const float* dout, const float* gate,
                                 const float* up, int64_t n) const {
  cuda::geglu_backward<float>(dgate, dup, dout, gate, up, n, stream_);
}
void CudaBackend::add_inplace(float* y, const float* x, int64_t n) const {
  cuda::add_inplace<float>(y, x, n, stream_);
}
void CudaBackend::axpy(float* y, float a, const float* x, int64_t n) const {
  cuda::axpy<float>(y, a, x, n, stream_);
}
void CudaBackend::add_bias_rows(float* out, const float* bias, int64_t N, int64_t C) const {
  cuda::bias_act<float>(out, nullptr, out, bias, N, C, false, stream_);
}

void CudaBackend::layernorm_forward(float* out, float* mean, float* rstd, const float* inp,
                                    const float* weight, const float* bias, int64_t N, int64_t C,
                                    double eps) const {
  cuda::layernorm_forward<float>(out, mean, rstd, inp, weight, bias, N, C, static_cast<float>(eps),
                                 stream_);
}
void CudaBackend::layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                                     const float* inp, const float* weight, const float* mean,
                                     const float* rstd, int64_t N, int64_t C) const {
  void* s = scratch(cuda::layernorm_backward_scratch_bytes(N, C));
  cuda::layernorm_backward<float>(dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C, s,
                                  stream_);
}
void CudaBackend::rmsnorm_forward(float* out, float* rstd, const float* inp, const float* weight,
                                  int64_t N, int64_t C, double eps, bool adds_one) const {
  cuda::rmsnorm_forward<float>(out, rstd, inp, weight, N, C, static_cast<float>(eps), stream_,
                               adds_one);
}
void CudaBackend::rmsnorm_backward(float* dinp, float* dweight, const float* dout, const float* inp,
                                   const float* weight, const float* rstd, int64_t N, int64_t C,
                                   bool adds_one) const {
  void* s = scratch(cuda::rmsnorm_backward_scratch_bytes(N, C));
  cuda::rmsnorm_backward<float>(dinp, dweight, dout, inp, weight, rstd, N, C, s, stream_,
                                adds_one);
}

void CudaBackend::rope(float* x, const int64_t* positions, int64_t B, int64_t T, int64_t H,
                       int64_t D, const double* inv_freq, double theta, bool backward) const {
  if (inv_freq != nullptr) {
    if (backward) return cuda::rope_backward<float>(x, positions, B, T, H, D, inv_freq, stream_);
    return cuda::rope_forward<float>(x, positions, B, T, H, D, inv_freq, stream_);
  }
  if (backward) return cuda::rope_backward<float>(x, positions, B, T, H, D, theta, stream_);
  cuda::rope_forward<float>(x, positions, B, T, H, D, theta, stream_);
}

void CudaBackend::embedding_forward(float* out, const int32_t* tokens, const float* table,
                                    int64_t N, int64_t C, int64_t row_begin, int64_t rows,
                                    bool accumulate) const {
  cuda::embedding_forward<float>(out, tokens, table, N, C, row_begin, rows, accumulate, stream_);
}
void CudaBackend::embedding_backward(float* dtable, const int32_t* tokens, const float* dout,
                                     int64_t N, int64_t C, int64_t row_begin, int64_t rows) const {
  void* s = scratch(cuda::embedding_backward_scratch_bytes(N));
  cuda::embedding_backward<float>(dtable, tokens, dout, N, C, row_begin, rows, s, stream_);
}

void CudaBackend::ce_row_max(float* mx, const float* logits, int64_t n, int64_t V) const {
  cuda::ce_row_max<float>(mx, logits, n, V, stream_);
}
void CudaBackend::ce_row_sumexp(float* sumexp, const float* logits, const float* mx, int64_t n,
                                int64_t V) const {
  cuda::ce_row_sumexp<float>(sumexp, logits, mx, n, V, stream_);
}
void CudaBackend::ce_target_logit(float* tl, const float* logits, const int32_t* targets, int64_t n,
                                  int64_t V, int64_t vocab_begin) const {
  cuda::ce_target_logit<float>(tl, logits, targets, n, V, vocab_begin, stream_);
}
void CudaBackend::ce_softmax_grad_inplace(float* logits, const float* lse, const int32_t* targets,
                                          const float* row_scale, int64_t n, int64_t V,
                                          int64_t vocab_begin) const {
  cuda::ce_softmax_grad_inplace<float>(logits, lse, targets, row_scale, n, V, vocab_begin, stream_);
}
double CudaBackend::log_sum_exp(const float* x, int64_t n) const {
  return cuda::log_sum_exp(x, n, scratch(cuda::log_sum_exp_scratch_bytes(n)), stream_);
}

void CudaBackend::attention_forward(float* out, float* lse, const float* q, const float* k,
                                    const float* v, const cpu::AttnDims& d, double scale) const {
  cuda::attention_forward<float>(out, lse, q, k, v, d, static_cast<float>(scale), stream_);
}
void CudaBackend::attention_backward(float* dq, float* dk, float* dv, const float* dout,
                                     const float* q, const float* k, const float* v,
                                     const float* out, const float* lse, const cpu::AttnDims& d,
                                     double scale) const {
  void* s = scratch(cuda::attention_backward_scratch_bytes(d));
  cuda::attention_backward<float>(dq, dk, dv, dout, q, k, v, out, lse, d, static_cast<float>(scale),
                                  s, stream_);
}
void CudaBackend::paged_attention_forward(float* out, float* lse, const float* q,
                                          const float* k_pool, const float* v_pool,
                                          const cpu::PagedSeq* seqs, int64_t n_seqs,
                                          const cpu::PagedAttnDims& d, double scale) const {
  cuda::paged_attention_forward(out, lse, q, k_pool, v_pool, seqs, n_seqs, d, scale, stream_);
}
void CudaBackend::paged_kv_write(float* pool, int64_t num_blocks, int64_t block_size,
                                 int64_t row_elems, const int32_t* blocks, int64_t n_blocks,
                                 int64_t pos0, int64_t n, const float* src) const {
  cuda::paged_kv_write(pool, num_blocks, block_size, row_elems, blocks, n_blocks, pos0, n, src,
                       stream_);
}
void CudaBackend::attention_merge(float* out, float* lse, const float* part_out,
                                  const float* part_lse, int64_t B, int64_t Hq, int64_t D,
                                  int64_t nq, int64_t len, int64_t i) const {
  cuda::attention_merge(out, lse, part_out, part_lse, B, Hq, D, nq, len, i, stream_);
}

void CudaBackend::gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                       const float* A, int64_t lda, const float* B, int64_t ldb, float beta,
                       float* C, int64_t ldc) const {
  cuda::gemm<float>(*blas_, trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc,
                    stream_);
}
void CudaBackend::linear_forward(float* out, const float* inp, const float* weight,
                                 const float* bias, int64_t N, int64_t IC, int64_t OC) const {
  cuda::linear_forward<float>(*blas_, out, nullptr, inp, weight, bias, N, IC, OC,
                              cuda::Epilogue::None, stream_);
}
void CudaBackend::linear_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                                  const float* inp, const float* weight, int64_t N, int64_t IC,
                                  int64_t OC) const {
  cuda::linear_backward<float>(*blas_, dinp, dweight, dbias, dout, inp, weight, N, IC, OC, stream_);
}

void CudaBackend::adamw_step(float* p, const float* g, float* m, float* v, int64_t n,
                             const cpu::AdamWParams& h) const {
  cuda::adamw_step(p, g, m, v, n, h, nullptr, stream_);
}
void CudaBackend::adam_step(float* p, const float* g, float* m, float* v, int64_t n,
                            const cpu::AdamWParams& h) const {
  cuda::adam_step(p, g, m, v, n, h, stream_);
}
void CudaBackend::sgd_step(float* p, const float* g, float* buf, int64_t n,
                           const cpu::SgdParams& h) const {
  cuda::sgd_step(p, g, buf, n, h, stream_);
}
double CudaBackend::sum_squares(const float* x, int64_t n) const {
  // The device double sits at the front of the scratch, the kernel's own after it.
  constexpr size_t kHead = 256;
  char* s = static_cast<char*>(scratch(kHead + cuda::sum_squares_scratch_bytes(n)));
  cuda::sum_squares(reinterpret_cast<double*>(s), x, n, s + kHead, stream_);
  double out = 0.0;
  copy_to_host(&out, s, sizeof(out));
  return out;
}
void CudaBackend::scale_inplace(float* x, int64_t n, float scale) const {
  cuda::scale_inplace(x, n, scale, stream_);
}
bool CudaBackend::has_nonfinite(const float* x, int64_t n) const {
  int* flag = static_cast<int*>(scratch(sizeof(int)));
  zero(flag, sizeof(int));
  cuda::has_nonfinite(flag, x, n, stream_);
  int out = 0;
  copy_to_host(&out, flag, sizeof(out));
  return out != 0;
}

}  // namespace parallm::ops
