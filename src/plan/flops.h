// Training FLOPs per token, model and hardware FLOPs utilisation (PaLM,
// Chowdhery et al. 2022, appendix B). Model FLOPs per token: 6N + 12LHQT,
// N = parameters that take part in matrix products (every weight matrix and
// the LM head; embedding lookups, norms and biases excluded), L layers, H
// heads, Q head dim, T sequence length. MFU = achieved model FLOP/s / peak.
// MoE layers count their active parameters: the router and top-k experts
// (dropped assignments still count, as Megatron does).
// HFU also counts the FLOPs spent recomputing activations (rematerialisation);
// it equals MFU without recomputation and exceeds it with it.
#pragma once
#include <cstdint>

#include "model/config.h"
#include "nn/recompute.h"
#include "plan/memory_model.h"

namespace parallm {

int64_t matmul_parameters(const ModelConfig& cfg);
// Matmul parameters of the transformer blocks only (N minus the LM head).
int64_t block_matmul_parameters(const ModelConfig& cfg);
// Adapter parameters of every block under cfg.lora (0 without LoRA):
// sum of r (in + out) over the adapted linears.
int64_t lora_matmul_parameters(const ModelConfig& cfg);
// 6N + 12LHQT: forward 2N + 4LHQT (QK^T and PV: 2LHQT each), backward twice that.
// With LoRA 4N + 6N_adapters + 12LHQT: the frozen base forms no weight gradients.
double training_flops_per_token(const ModelConfig& cfg, int64_t seq_len);
// FLOPs per token spent recomputing activations in the backward pass:
//   none:      0
//   selective: 4LHQT, the attention core's forward (QK^T, softmax, PV) rerun
//              (Korthikanti et al. 2022, as PaLM counts it)
//   full:      2N_blocks + 4LHQT, one more forward of every block; the LM head
//              is not recomputed (full recompute keeps each block's input), so
//              this is slightly below PaLM's "one more forward" 2N + 4LHQT.
// The flash-style attention backward's own recomputation of the scores is
// an implementation detail and, as in PaLM and Megatron, not counted.
double recompute_flops_per_token(const ModelConfig& cfg, int64_t seq_len, Recompute mode);
// Model FLOPs plus recomputation: the numerator of HFU.
double hardware_flops_per_token(const ModelConfig& cfg, int64_t seq_len, Recompute mode);
// The same for parallm's own modes (docs/recompute.md), which the trainer's
// HFU uses: its selective mode recomputes only elementwise work (norm
// outputs, GELU/SwiGLU), no matmul FLOPs, so it adds 0 (its flash attention
// recomputes the scores in every mode, uncounted as above); full adds the
// same as recompute_flops_per_token(Full).
double parallm_recompute_flops_per_token(const ModelConfig& cfg, int64_t seq_len, Recompute mode);
double parallm_hardware_flops_per_token(const ModelConfig& cfg, int64_t seq_len, Recompute mode);
// Utilisation of `ranks` devices of `peak_flops_per_rank` each at
// tokens_per_s tokens per second with flops_per_token FLOPs each (0 when the
// peak is unknown).
double flops_utilisation(double tokens_per_s, double flops_per_token, double peak_flops_per_rank,
                         int ranks);
// Best of a few GEMMs (1024^3) with the BLAS thread count in effect: this
// machine's practical peak in FLOP/s for the run's matmul precision (fp32:
// oneDNN sgemm; bf16/fp16: the reduced-precision GEMM the run will use,
// native or emulated), the default MFU denominator (--peak-tflops overrides).
double measure_gemm_peak_flops(Precision precision = Precision::FP32,
                               bool allow_native_lowp = true);

}  // namespace parallm
