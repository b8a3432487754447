#include "ops/nf4.h"

#include "kernels/cpu/nf4_gemm.h"
#include "ops/kernel_scratch.h"

namespace parallm::ops {

void nf4_linear_forward(const Stream& s, Allocator& a, float* out, const float* inp,
                        const Nf4Weight& w, const float* bias, int64_t M,
                        std::optional<LowpType> round) {
  require_cpu_kernels(s, "nf4_linear_forward");
  KernelScratch scratch(s, a);
  cpu::nf4_linear_forward(scratch.get(), s.operand(out), s.operand(inp), w, s.operand(bias), M,
                          round);
}

void nf4_linear_backward_input(const Stream& s, Allocator& a, float* dinp, const float* dout,
                               const Nf4Weight& w, int64_t M, std::optional<LowpType> round) {
  require_cpu_kernels(s, "nf4_linear_backward_input");
  KernelScratch scratch(s, a);
  cpu::nf4_linear_backward_input(scratch.get(), s.operand(dinp), s.operand(dout), w, M, round);
}

}  // namespace parallm::ops
