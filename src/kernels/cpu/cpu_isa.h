// The instruction set the CPU kernels run on: the newest the machine has,
// capped by PARALLM_MAX_CPU_ISA (values as oneDNN's ONEDNN_MAX_CPU_ISA:
// avx2, avx512_core, avx512_core_vnni, avx512_core_bf16, avx512_core_amx; unset or "all": no
// cap). Every run-time choice between instruction sets obeys it: oneDNN's
// GEMMs (f32 sgemm and the bf16 matmul) and parallm's own AVX-512 code. The
// loops the compiler vectorises are built for 256-bit vectors everywhere
// (cmake/Layers.cmake), so they sum alike on AVX2 and AVX-512 machines; a
// cap of avx2 therefore runs what an AVX2 machine runs. Fixed at the first
// call, before oneDNN is first used, and constant for the process after.
#pragma once
#include <string>

namespace parallm::cpu {

// Ordered: each contains the ones before it.
// VNNI (int8 dot products, vpdpbusd) comes with every AVX512-BF16 CPU.
enum class CpuIsa { kBaseline, kAvx2, kAvx512Core, kAvx512CoreVnni, kAvx512CoreBf16, kAvx512CoreAmx };

// The effective ISA (machine's, under the cap). Throws, naming the value and
// the accepted ones, when PARALLM_MAX_CPU_ISA is not one of them.
CpuIsa cpu_isa();
inline bool cpu_isa_has(CpuIsa isa) { return cpu_isa() >= isa; }
std::string cpu_isa_name(CpuIsa isa);
// For a job's banner: "avx512_core_bf16", or "avx2 (PARALLM_MAX_CPU_ISA=avx2)".
std::string cpu_isa_summary();

}  // namespace parallm::cpu
