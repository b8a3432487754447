// Training FLOPs per token and model FLOPs utilisation (REFERENCE.md, PaLM
// appendix B): 6 * N_matmul + 12 * L * H * Q * T, where N_matmul counts the
// parameters that take part in matrix products (every weight matrix and the
// LM head; embedding lookups and norms excluded).
#pragma once
#include <cstdint>

#include "model/config.h"

namespace parallm {

int64_t matmul_parameters(const ModelConfig& cfg);
double training_flops_per_token(const ModelConfig& cfg, int64_t seq_len);
// Best of a few single-precision GEMMs (1024^3) with the BLAS thread count in
// effect: this machine's practical fp32 peak in FLOP/s, the MFU denominator.
double measure_gemm_peak_flops();

}  // namespace parallm
