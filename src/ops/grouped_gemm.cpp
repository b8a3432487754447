#include "ops/grouped_gemm.h"

#include "kernels/cpu/grouped_gemm.h"
#include "ops/kernel_scratch.h"

namespace parallm::ops {

void grouped_linear_forward(const Stream& s, float* out, const float* inp, const float* weight,
                            const float* bias, const int64_t* offsets, int64_t groups, int64_t IC,
                            int64_t OC) {
  require_cpu_kernels(s, "grouped_linear_forward");
  cpu::grouped_linear_forward(s.operand(out), s.operand(inp), s.operand(weight), s.operand(bias),
                              s.operand(offsets), groups, IC, OC);
}

void grouped_linear_backward(const Stream& s, float* dinp, float* dweight, float* dbias,
                             const float* dout, const float* inp, const float* weight,
                             const int64_t* offsets, int64_t groups, int64_t IC, int64_t OC) {
  require_cpu_kernels(s, "grouped_linear_backward");
  cpu::grouped_linear_backward(s.operand(dinp), s.operand(dweight), s.operand(dbias),
                               s.operand(dout), s.operand(inp), s.operand(weight),
                               s.operand(offsets), groups, IC, OC);
}

void grouped_linear_forward_lowp(const Stream& s, const LowpGemm& gemm, Allocator& scratch,
                                 float* out, const uint16_t* inp, const uint16_t* weight,
                                 const float* bias, const int64_t* offsets, int64_t groups,
                                 int64_t IC, int64_t OC) {
  require_cpu_kernels(s, "grouped_linear_forward_lowp");
  KernelScratch ks(s, scratch);
  cpu::grouped_linear_forward_lowp(gemm, ks.get(), s.operand(out), s.operand(inp),
                                   s.operand(weight), s.operand(bias), s.operand(offsets), groups,
                                   IC, OC);
}

void grouped_linear_backward_lowp(const Stream& s, const LowpGemm& gemm, Allocator& scratch,
                                  float* dinp, float* dweight, float* dbias, const uint16_t* dout,
                                  const float* dout_f32, const uint16_t* inp,
                                  const uint16_t* weight, const int64_t* offsets, int64_t groups,
                                  int64_t IC, int64_t OC) {
  require_cpu_kernels(s, "grouped_linear_backward_lowp");
  KernelScratch ks(s, scratch);
  cpu::grouped_linear_backward_lowp(
      gemm, ks.get(), s.operand(dinp), s.operand(dweight), s.operand(dbias), s.operand(dout),
      s.operand(dout_f32), s.operand(inp), s.operand(weight), s.operand(offsets), groups, IC, OC);
}

}  // namespace parallm::ops
