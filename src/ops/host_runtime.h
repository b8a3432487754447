// The host's compute runtime as the jobs configure and report it: the
// kernels' thread count and the CPU instruction set they may use
// (PARALLM_MAX_CPU_ISA, kernels/cpu/cpu_isa.h).
#pragma once
#include <string>

namespace parallm::ops {

void set_host_threads(int n);
int host_threads();
// Applies the ISA cap before any kernel runs (a bad value is an error here).
void init_host_isa();
// E.g. "avx512_core_bf16 (capped by PARALLM_MAX_CPU_ISA=avx2: avx2)".
std::string host_isa_summary();

}  // namespace parallm::ops
