// CudaTransformer: a GPT-2 or LLaMA family model trained (and run with a KV
// cache for generation) on one GPU with the CUDA kernels, forward and backward written out layer by
// layer as the CPU Transformer does (no MoE, LoRA or dropout yet: refused at construction).
// Parameters start as a copy of a host ParameterSet (so the counter-RNG
// initialisation is the CPU's, bit for bit) and keep its flat layout on the
// device: fp32 masters and gradients, plus a bf16 copy that the GEMMs read
// under CudaPrecision::BF16. Activations are bf16 or fp32 by the same
// switch; statistics, losses and gradients accumulate in fp32.
// Device memory comes from the caller's CUDA Allocator with the usual tags.
#pragma once
#include <cuda_runtime_api.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "model/config.h"
#include "nn/parameters.h"
#include "optim/optimizer_config.h"

namespace parallm {

enum class CudaPrecision { F32, BF16 };

class CudaTransformer {
 public:
  // Activations for micro-batches of up to max_B rows of T tokens.
  CudaTransformer(const ModelConfig& cfg, const ParameterSet& host, Allocator& device_alloc,
                  CudaPrecision precision, int64_t max_B, int64_t T, bool allow_tf32 = false);
  ~CudaTransformer();
  CudaTransformer(const CudaTransformer&) = delete;
  CudaTransformer& operator=(const CudaTransformer&) = delete;

  // inputs, targets: host (B, T) int32. Gradients accumulate grad_scale *
  // d(sum of token losses); returns that sum (waits for the GPU).
  double forward_backward(const int32_t* inputs, const int32_t* targets, int64_t B,
                          double grad_scale);
  void zero_grads();
  // torch.nn.utils.clip_grad_norm_: returns the global norm; scales the
  // gradients on the device when max_norm > 0 and the norm exceeds it.
  double clip_grad_norm(double max_norm);
  // One AdamW / Adam update of every parameter (decay only where the
  // ParamSpec allows), step counted from 1.
  void optimizer_step(const OptimizerConfig& cfg, double lr, int64_t step);
  // KV-cached inference, for generation: feeds n new tokens of each of B rows
  // (host (B, n) int32) at positions pos0 .. pos0 + n - 1 and writes each
  // row's logits after its last new token to `logits` (host (B, V) fp32).
  // Keys and values stay in a cache of max_B rows of T positions a layer
  // (allocated on first use, tag activation); a call at pos0 overwrites from
  // pos0 on, so pos0 = 0 starts new sequences. Rows share pos0 (equal
  // lengths; the ragged, paged engine is the CPU's). Waits for the GPU.
  void forward_cached(const int32_t* tokens, int64_t B, int64_t n, int64_t pos0, float* logits);
  // The same with each row's argmax (the first of equal maxima) taken on the
  // device: next (host (B)) receives B ids instead of B x V logits.
  void greedy_cached(const int32_t* tokens, int64_t B, int64_t n, int64_t pos0, int32_t* next);
  // Device values back into a host set of the same layout.
  void copy_values_to(ParameterSet& host) const;
  cudaStream_t stream() const;
  const ModelConfig& config() const;
  // Profiling (off by default): while on, every phase of a step records a
  // CUDA event; take_profile() waits and returns GPU milliseconds per phase
  // name ("fwd.attention", "bwd.mlp_fc", "optimizer", ...) summed since the
  // last call, in order of first appearance.
  void set_profiling(bool on);
  std::vector<std::pair<std::string, double>> take_profile();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace parallm
