#include "ops/quant.h"

#include "kernels/cpu/quant_gemm.h"
#include "ops/kernel_scratch.h"

namespace parallm::ops {

void quant_linear_forward(const Stream& s, Allocator& a, float* out, const float* inp,
                          const QuantWeight& w, const float* bias, int64_t M) {
  require_cpu_kernels(s, "quant_linear_forward");
  KernelScratch scratch(s, a);
  cpu::quant_linear_forward(scratch.get(), s.operand(out), s.operand(inp), w, s.operand(bias), M);
}

}  // namespace parallm::ops
