// The state behind CudaTransformer (private to src/model/cuda): parameter
// layout, device buffers and the templated step. One Saved per layer holds
// what that layer's backward reads; the d* buffers are one layer's
// activation gradients, reused layer after layer.
#pragma once
#include <string>
#include <vector>

#include "kernels/cpu/attention.h"
#include "kernels/cuda/blas.h"
#include "model/cuda/cuda_transformer.h"

namespace parallm {

// A device buffer's elements as T: the buffers are untyped flat Tensors whose
// dtype follows CudaPrecision, so the templated step picks the view.
template <class T>
T* ptr(const Tensor& t) {
  return static_cast<T*>(t.raw());
}

// cuda::linear_backward with d(input) written (accumulate false) or added
// (cuda_block.cpp).
template <class T>
void linear_grads(cuda::Blas& blas, T* dinp, bool accumulate, float* dweight, float* dbias,
                  const T* dout, const T* inp, const T* weight, int64_t N, int64_t IC, int64_t OC,
                  cudaStream_t s);

struct CudaTransformer::Impl {
  Impl(const ModelConfig& c, const ParameterSet& host, Allocator& a, CudaPrecision p, int64_t max_B,
       int64_t T, bool allow_tf32);
  ~Impl();

  struct ParamEntry {
    std::string name;
    int64_t offset = 0, numel = 0;
    bool decay = true;
  };
  // pre: GELU's input (GPT-2) or the gate (LLaMA, with up beside it); mean*
  // stay empty under RMSNorm.
  struct Saved {
    Tensor x, ln1, mean1, rstd1, q, k, v, att, lse, mid, ln2, mean2, rstd2, pre, up, h;
  };

  void refresh_bf16();
  // Records a profiling event closing the phase `name` (no-op unless profiling).
  void mark(const char* name);
  size_t scratch_bytes() const;
  // Flat offset of the parameter with this internal name (throws if absent).
  int64_t offset_of(const std::string& name) const;
  template <class T>
  const T* weight(const std::string& name) const;  // the copy the kernels read
  float* grad(const std::string& name) const;
  template <class T>
  double step(const int32_t* inputs, const int32_t* targets, int64_t B, double grad_scale);
  // Family pieces (cuda_block.cpp): norm, attention, MLP, each forward and
  // backward; the backward ones add d(input) into dinp.
  template <class T>
  void norm_forward(const std::string& name, const T* in, T* out, Tensor& mean, Tensor& rstd,
                    int64_t N);
  template <class T>
  void norm_backward(const std::string& name, T* dinp, const T* dout, const T* in,
                     const Tensor& mean, const Tensor& rstd, int64_t N);
  // Where a forward's new tokens sit (cuda_decode.cpp): null for a training
  // step (seq tokens a row, attending to themselves); under generation n
  // tokens a row at positions pos0.., their keys and values appended to the
  // cache, which the attention then reads (capacity seq, the tail masked by
  // the causal rule).
  struct CacheView {
    int64_t n, pos0;
  };
  template <class T>
  void layer_forward(int l, int64_t B, const T* in, T* out, const CacheView* cache = nullptr);
  template <class T>
  void layer_backward(int l, int64_t B);
  template <class T>
  void mlp_forward(int l, int64_t N, Saved& s, T* out);
  template <class T>
  void mlp_backward(int l, int64_t N, Saved& s, T* dln_out);
  cpu::AttnDims attn_dims(int64_t B) const;
  template <class T>
  void head(int64_t N, double grad_scale);
  // Generation (cuda_decode.cpp): checks the call, allocates the cache on
  // first use, runs tokens (host (B, n)) at pos0 and leaves each row's last
  // logits in logits32 (B, V) fp32 on the device.
  void run_cached(const int32_t* tokens, int64_t B, int64_t n, int64_t pos0);
  void ensure_cache();
  template <class T>
  void cached_forward(const int32_t* tokens, int64_t B, int64_t n, int64_t pos0);

  ModelConfig cfg;
  std::vector<ParamEntry> params;
  Allocator& alloc;
  CudaPrecision precision;
  int64_t max_B, seq;  // buffers hold max_B rows of seq tokens
  cuda::Blas blas;
  cudaStream_t stream = nullptr;
  int64_t head_rows = 0;
  bool profiling = false;
  cudaEvent_t last_mark = nullptr;
  std::vector<std::pair<std::string, cudaEvent_t>> marks;
  Tensor values, grads, values16, m, v;
  Tensor decay_mask;  // uint8 per 16-element block of the flat buffer: 1 where AdamW decays
  std::vector<Saved> layers;
  Tensor xf, lnf, meanf, rstdf;
  Tensor dx, dln, dq, dk, dv, datt, dh, dpre, dup, logits, losses, tokens, targets, positions,
      rope_positions, sumsq, scratch;
  // Generation: per layer keys and values (max_B, seq, Hkv, D), zeroed, so the
  // masked tail an attention tile reads holds no NaN (0 x NaN poisons P.V);
  // each row's last logits in fp32 and their argmax.
  std::vector<Tensor> cache_k, cache_v;
  Tensor logits32, next_tokens;
};

}  // namespace parallm
