// CudaBackend: the op interface's CUDA kernels (ops/device_backend.h), all
// fp32, on one stream of one GPU. Each op queues its kernel on the stream
// and returns; the three with a host result wait for it. Backward kernels
// that need scratch (norms, embedding, attention, sum of squares) share one
// device buffer that grows to the largest request: the stream orders its
// uses, so one buffer serves every op of the stream. Invariant: one host
// thread issues a backend's ops (the job's main thread, as on the CPU),
// so the scratch needs no lock.
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>

#include "ops/device_backend.h"
#include "tensor/memory_resource.h"

namespace parallm::cuda {
class Blas;
}

namespace parallm::ops {

class CudaBackend final : public DeviceBackend {
 public:
  // memory: where the scratch buffer comes from (the GPU's allocator), on `stream`.
  CudaBackend(cudaStream_t stream, cuda::Blas& blas, MemoryResource& memory);
  ~CudaBackend() override;
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  const char* name() const override { return "cuda"; }
  void copy_to_device(void* dst, const void* host_src, size_t bytes) const override;
  void copy_to_host(void* host_dst, const void* src, size_t bytes) const override;
  void copy(void* dst, const void* src, size_t bytes) const override;
  void zero(void* dst, size_t bytes) const override;
  void fill(float* dst, int64_t n, float value) const override;
  void synchronize() const override;

  void gelu_forward(float* out, const float* inp, int64_t n) const override;
  void gelu_backward(float* dinp, const float* inp, const float* dout, int64_t n) const override;
  void swiglu_forward(float* out, const float* gate, const float* up, int64_t n) const override;
  void swiglu_backward(float* dgate, float* dup, const float* dout, const float* gate,
                       const float* up, int64_t n) const override;
  void geglu_forward(float* out, const float* gate, const float* up, int64_t n) const override;
  void geglu_backward(float* dgate, float* dup, const float* dout, const float* gate,
                      const float* up, int64_t n) const override;
  void add_inplace(float* y, const float* x, int64_t n) const override;
  void axpy(float* y, float a, const float* x, int64_t n) const override;
  void add_bias_rows(float* out, const float* bias, int64_t N, int64_t C) const override;

  void layernorm_forward(float* out, float* mean, float* rstd, const float* inp,
                         const float* weight, const float* bias, int64_t N, int64_t C,
                         double eps) const override;
  void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                          const float* inp, const float* weight, const float* mean,
                          const float* rstd, int64_t N, int64_t C) const override;
  void rmsnorm_forward(float* out, float* rstd, const float* inp, const float* weight, int64_t N,
                       int64_t C, double eps, bool adds_one) const override;
  void rmsnorm_backward(float* dinp, float* dweight, const float* dout, const float* inp,
                        const float* weight, const float* rstd, int64_t N, int64_t C,
                        bool adds_one) const override;

  void rope(float* x, const int64_t* positions, int64_t B, int64_t T, int64_t H, int64_t D,
            const double* inv_freq, double theta, bool backward) const override;

  void embedding_forward(float* out, const int32_t* tokens, const float* table, int64_t N,
                         int64_t C, int64_t row_begin, int64_t rows,
                         bool accumulate) const override;
  void embedding_backward(float* dtable, const int32_t* tokens, const float* dout, int64_t N,
                          int64_t C, int64_t row_begin, int64_t rows) const override;

  void ce_row_max(float* mx, const float* logits, int64_t n, int64_t V) const override;
  void ce_row_sumexp(float* sumexp, const float* logits, const float* mx, int64_t n,
                     int64_t V) const override;
  void ce_target_logit(float* tl, const float* logits, const int32_t* targets, int64_t n, int64_t V,
                       int64_t vocab_begin) const override;
  void ce_softmax_grad_inplace(float* logits, const float* lse, const int32_t* targets,
                               const float* row_scale, int64_t n, int64_t V,
                               int64_t vocab_begin) const override;
  double log_sum_exp(const float* x, int64_t n) const override;

  void attention_forward(float* out, float* lse, const float* q, const float* k, const float* v,
                         const cpu::AttnDims& d, double scale) const override;
  void attention_backward(float* dq, float* dk, float* dv, const float* dout, const float* q,
                          const float* k, const float* v, const float* out, const float* lse,
                          const cpu::AttnDims& d, double scale) const override;
  void paged_attention_forward(float* out, float* lse, const float* q, const float* k_pool,
                               const float* v_pool, const cpu::PagedSeq* seqs, int64_t n_seqs,
                               const cpu::PagedAttnDims& d, double scale) const override;
  void paged_kv_write(float* pool, int64_t num_blocks, int64_t block_size, int64_t row_elems,
                      const int32_t* blocks, int64_t n_blocks, int64_t pos0, int64_t n,
                      const float* src) const override;
  void attention_merge(float* out, float* lse, const float* part_out, const float* part_lse,
                       int64_t B, int64_t Hq, int64_t D, int64_t nq, int64_t len,
                       int64_t i) const override;

  void moe_gather(float* send, const float* x, const cpu::AssignedRows& r,
                  int64_t C) const override;
  void moe_combine(float* out, const float* y, const float* gate, const cpu::AssignedRows& r,
                   int64_t C) const override;
  void moe_combine_backward(float* dy, float* dgate, const float* dout, const float* y,
                            const float* gate, const cpu::AssignedRows& r,
                            int64_t C) const override;
  void moe_gather_backward(float* dx, const float* dsend, const cpu::AssignedRows& r,
                           int64_t C) const override;

  void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
            const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
            int64_t ldc) const override;
  void linear_forward(float* out, const float* inp, const float* weight, const float* bias,
                      int64_t N, int64_t IC, int64_t OC) const override;
  void linear_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                       const float* inp, const float* weight, int64_t N, int64_t IC,
                       int64_t OC) const override;

  void round_to_lowp(uint16_t* dst, const float* src, int64_t n, cpu::LowpType t) const override;
  void round_inplace(float* x, int64_t n, cpu::LowpType t) const override;
  void lowp_gemm(cpu::LowpType t, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K,
                 const uint16_t* A, int64_t lda, const uint16_t* B, int64_t ldb, float beta,
                 float* C, int64_t ldc) const override;

  void adamw_step(float* p, const float* g, float* m, float* v, int64_t n,
                  const cpu::AdamWParams& h) const override;
  void adam_step(float* p, const float* g, float* m, float* v, int64_t n,
                 const cpu::AdamWParams& h) const override;
  void sgd_step(float* p, const float* g, float* buf, int64_t n,
                const cpu::SgdParams& h) const override;
  double sum_squares(const float* x, int64_t n) const override;
  void scale_inplace(float* x, int64_t n, float scale) const override;
  bool has_nonfinite(const float* x, int64_t n) const override;

 private:
  // The shared scratch buffer, at least `bytes` (contents undefined).
  void* scratch(size_t bytes) const;

  cudaStream_t stream_;
  cuda::Blas* blas_;
  MemoryResource* memory_;
  mutable void* scratch_ = nullptr;
  mutable size_t scratch_bytes_ = 0;
};

}  // namespace parallm::ops
