// The CPU ISA cap (kernels/cpu/cpu_isa.h) in the process the suite runs in:
// without PARALLM_MAX_CPU_ISA the kernels use what the machine has; under
// the cap (scripts/test.sh runs the suite's second pass with
// PARALLM_MAX_CPU_ISA=avx2) nothing newer than the cap runs, oneDNN
// included, and the bf16 GEMM takes the emulated path.
#include "kernels/cpu/cpu_isa.h"

#include <gtest/gtest.h>

#include <oneapi/dnnl/dnnl.hpp>

#include "base/env.h"
#include "kernels/cpu/gemm_bf16.h"

namespace parallm {
namespace {

using cpu::CpuIsa;

// What the machine has, by the compiler's own CPU detection.
CpuIsa machine_isa() {
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx2")) return CpuIsa::kBaseline;
  if (!(__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq")))
    return CpuIsa::kAvx2;
  if (!__builtin_cpu_supports("avx512bf16")) return CpuIsa::kAvx512Core;
  return CpuIsa::kAvx512CoreBf16;  // AMX is not visible to __builtin_cpu_supports in GCC 12
}

TEST(CpuIsa, IsTheMachinesUnderTheCap) {
  const std::string cap = read_max_cpu_isa();
  const CpuIsa have = machine_isa();
  const CpuIsa got = cpu::cpu_isa();
  if (cap.empty() || cap == "all") {
    // AMX only adds to AVX512-BF16, and only oneDNN sees it.
    EXPECT_EQ(got == CpuIsa::kAvx512CoreAmx ? CpuIsa::kAvx512CoreBf16 : got, have)
        << cpu::cpu_isa_summary();
    EXPECT_EQ(cpu::cpu_isa_summary().find("PARALLM_MAX_CPU_ISA"), std::string::npos);
  } else {
    EXPECT_LE(got, std::max(have, CpuIsa::kAvx2)) << cpu::cpu_isa_summary();
    EXPECT_NE(cpu::cpu_isa_summary().find("PARALLM_MAX_CPU_ISA=" + cap), std::string::npos)
        << cpu::cpu_isa_summary();
    if (cap == "avx2") {
      EXPECT_EQ(got, std::min(have, CpuIsa::kAvx2));
      // oneDNN runs no AVX-512 kernel under the cap.
      const auto eff = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
      const auto avx512 = static_cast<unsigned>(dnnl::cpu_isa::avx512_core);
      EXPECT_NE(eff & avx512, avx512);
    }
  }
  EXPECT_EQ(cpu::LowpGemm(cpu::LowpType::BF16).native(), got >= CpuIsa::kAvx512CoreBf16);
}

}  // namespace
}  // namespace parallm
