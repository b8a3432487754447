// DeviceBackend: the kernels of a device that has its own (a GPU), as the
// ops see them. The host and the test device run the CPU kernels inside
// each op (ops/*.cpp); a job on a GPU makes a Stream over a backend
// (ops/cuda/cuda_device.h) and every op on that stream is one virtual call
// here, with the same operands as the op (device pointers) and nothing else.
// Like ggml's backend interface: the model never names a backend, and an op
// a backend lacks is an error naming the op and the device
// (require_cpu_kernels), not a silent host fallback. Ops with a host result
// (sum_squares, has_nonfinite, copy_to_host) wait for the queue; all others
// are queued and return at once.
#pragma once
#include <cstddef>
#include <cstdint>

#include "kernels/cpu/attention.h"
#include "kernels/cpu/gemm_bf16.h"
#include "kernels/cpu/moe_rows.h"
#include "kernels/cpu/optimizer.h"
#include "kernels/cpu/paged_attention.h"

namespace parallm::ops {

class DeviceBackend {
 public:
  virtual ~DeviceBackend() = default;
  virtual const char* name() const = 0;

  // Copies and fills (copy.h). copy_to_host waits for the bytes.
  virtual void copy_to_device(void* dst, const void* host_src, size_t bytes) const = 0;
  virtual void copy_to_host(void* host_dst, const void* src, size_t bytes) const = 0;
  virtual void copy(void* dst, const void* src, size_t bytes) const = 0;
  virtual void zero(void* dst, size_t bytes) const = 0;
  virtual void fill(float* dst, int64_t n, float value) const = 0;
  virtual void synchronize() const = 0;

  // activation.h
  virtual void gelu_forward(float* out, const float* inp, int64_t n) const = 0;
  virtual void gelu_backward(float* dinp, const float* inp, const float* dout, int64_t n) const = 0;
  virtual void swiglu_forward(float* out, const float* gate, const float* up, int64_t n) const = 0;
  virtual void swiglu_backward(float* dgate, float* dup, const float* dout, const float* gate,
                               const float* up, int64_t n) const = 0;
  virtual void geglu_forward(float* out, const float* gate, const float* up, int64_t n) const = 0;
  virtual void geglu_backward(float* dgate, float* dup, const float* dout, const float* gate,
                              const float* up, int64_t n) const = 0;
  virtual void add_inplace(float* y, const float* x, int64_t n) const = 0;
  virtual void axpy(float* y, float a, const float* x, int64_t n) const = 0;
  // out (N, C) += bias (C) on every row.
  virtual void add_bias_rows(float* out, const float* bias, int64_t N, int64_t C) const = 0;

  // norm.h
  virtual void layernorm_forward(float* out, float* mean, float* rstd, const float* inp,
                                 const float* weight, const float* bias, int64_t N, int64_t C,
                                 double eps) const = 0;
  virtual void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                                  const float* inp, const float* weight, const float* mean,
                                  const float* rstd, int64_t N, int64_t C) const = 0;
  // adds_one: the weight is used as 1 + w (Gemma).
  virtual void rmsnorm_forward(float* out, float* rstd, const float* inp, const float* weight,
                               int64_t N, int64_t C, double eps, bool adds_one) const = 0;
  virtual void rmsnorm_backward(float* dinp, float* dweight, const float* dout, const float* inp,
                                const float* weight, const float* rstd, int64_t N, int64_t C,
                                bool adds_one) const = 0;

  // rope.h: inv_freq (D / 2 values, a device buffer) or, when null, theta.
  virtual void rope(float* x, const int64_t* positions, int64_t B, int64_t T, int64_t H, int64_t D,
                    const double* inv_freq, double theta, bool backward) const = 0;

  // embedding.h
  virtual void embedding_forward(float* out, const int32_t* tokens, const float* table, int64_t N,
                                 int64_t C, int64_t row_begin, int64_t rows,
                                 bool accumulate) const = 0;
  virtual void embedding_backward(float* dtable, const int32_t* tokens, const float* dout,
                                  int64_t N, int64_t C, int64_t row_begin, int64_t rows) const = 0;

  // cross_entropy.h
  virtual void ce_row_max(float* mx, const float* logits, int64_t n, int64_t V) const = 0;
  virtual void ce_row_sumexp(float* sumexp, const float* logits, const float* mx, int64_t n,
                             int64_t V) const = 0;
  virtual void ce_target_logit(float* tl, const float* logits, const int32_t* targets, int64_t n,
                               int64_t V, int64_t vocab_begin) const = 0;
  virtual void ce_softmax_grad_inplace(float* logits, const float* lse, const int32_t* targets,
                                       const float* row_scale, int64_t n, int64_t V,
                                       int64_t vocab_begin) const = 0;
  virtual double log_sum_exp(const float* x, int64_t n) const = 0;

  // attention.h (exact attention; d.doc_start is a device buffer)
  virtual void attention_forward(float* out, float* lse, const float* q, const float* k,
                                 const float* v, const cpu::AttnDims& d, double scale) const = 0;
  virtual void attention_backward(float* dq, float* dk, float* dv, const float* dout,
                                  const float* q, const float* k, const float* v, const float* out,
                                  const float* lse, const cpu::AttnDims& d, double scale) const = 0;
  // seqs is host metadata whose block tables are device buffers.
  virtual void paged_attention_forward(float* out, float* lse, const float* q, const float* k_pool,
                                       const float* v_pool, const cpu::PagedSeq* seqs,
                                       int64_t n_seqs, const cpu::PagedAttnDims& d,
                                       double scale) const = 0;
  virtual void paged_kv_write(float* pool, int64_t num_blocks, int64_t block_size,
                              int64_t row_elems, const int32_t* blocks, int64_t n_blocks,
                              int64_t pos0, int64_t n, const float* src) const = 0;
  virtual void attention_merge(float* out, float* lse, const float* part_out,
                               const float* part_lse, int64_t B, int64_t Hq, int64_t D, int64_t nq,
                               int64_t len, int64_t i) const = 0;

  // moe_rows.h (r's fed and send_row are device buffers)
  virtual void moe_gather(float* send, const float* x, const cpu::AssignedRows& r,
                          int64_t C) const = 0;
  virtual void moe_combine(float* out, const float* y, const float* gate,
                           const cpu::AssignedRows& r, int64_t C) const = 0;
  virtual void moe_combine_backward(float* dy, float* dgate, const float* dout, const float* y,
                                    const float* gate, const cpu::AssignedRows& r,
                                    int64_t C) const = 0;
  virtual void moe_gather_backward(float* dx, const float* dsend, const cpu::AssignedRows& r,
                                   int64_t C) const = 0;

  // matmul.h
  virtual void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                    const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
                    int64_t ldc) const = 0;
  virtual void linear_forward(float* out, const float* inp, const float* weight, const float* bias,
                              int64_t N, int64_t IC, int64_t OC) const = 0;
  virtual void linear_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                               const float* inp, const float* weight, int64_t N, int64_t IC,
                               int64_t OC) const = 0;

  // lowp.h: 16-bit rounding, and C (f32) = op(A) op(B) + beta C with A, B 16-bit.
  virtual void round_to_lowp(uint16_t* dst, const float* src, int64_t n,
                             cpu::LowpType t) const = 0;
  virtual void round_inplace(float* x, int64_t n, cpu::LowpType t) const = 0;
  virtual void lowp_gemm(cpu::LowpType t, bool trans_a, bool trans_b, int64_t M, int64_t N,
                         int64_t K, const uint16_t* A, int64_t lda, const uint16_t* B, int64_t ldb,
                         float beta, float* C, int64_t ldc) const = 0;

  // optimizer.h
  virtual void adamw_step(float* p, const float* g, float* m, float* v, int64_t n,
                          const cpu::AdamWParams& h) const = 0;
  virtual void adam_step(float* p, const float* g, float* m, float* v, int64_t n,
                         const cpu::AdamWParams& h) const = 0;
  virtual void sgd_step(float* p, const float* g, float* buf, int64_t n,
                        const cpu::SgdParams& h) const = 0;
  virtual double sum_squares(const float* x, int64_t n) const = 0;
  virtual void scale_inplace(float* x, int64_t n, float scale) const = 0;
  virtual bool has_nonfinite(const float* x, int64_t n) const = 0;
};

}  // namespace parallm::ops
