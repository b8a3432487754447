#include "ops/grouped_gemm.h"

#include <vector>

#include "kernels/cpu/grouped_gemm.h"
#include "ops/device_backend.h"
#include "ops/kernel_scratch.h"

namespace parallm::ops {
namespace {

// A device backend runs the groups as one linear (or 16-bit GEMM) each: the
// row offsets come to the host once (the only wait), then every group's
// call is queued. Empty groups queue nothing.
std::vector<int64_t> host_offsets(const DeviceBackend& b, const int64_t* offsets, int64_t groups) {
  std::vector<int64_t> h(static_cast<size_t>(groups + 1));
  b.copy_to_host(h.data(), offsets, h.size() * sizeof(int64_t));
  return h;
}

template <class T>
const T* at(const T* p, int64_t i) {
  return p == nullptr ? nullptr : p + i;
}
template <class T>
T* at(T* p, int64_t i) {
  return p == nullptr ? nullptr : p + i;
}

}  // namespace

void grouped_linear_forward(const Stream& s, float* out, const float* inp, const float* weight,
                            const float* bias, const int64_t* offsets, int64_t groups, int64_t IC,
                            int64_t OC) {
  if (const DeviceBackend* b = s.backend()) {
    const std::vector<int64_t> o = host_offsets(*b, offsets, groups);
    for (int64_t g = 0; g < groups; ++g)
      if (const int64_t rows = o[g + 1] - o[g]; rows > 0)
        b->linear_forward(out + o[g] * OC, inp + o[g] * IC, weight + g * OC * IC,
                          at(bias, g * OC), rows, IC, OC);
    return;
  }
  require_cpu_kernels(s, "grouped_linear_forward");
  cpu::grouped_linear_forward(s.operand(out), s.operand(inp), s.operand(weight), s.operand(bias),
                              s.operand(offsets), groups, IC, OC);
}

void grouped_linear_backward(const Stream& s, float* dinp, float* dweight, float* dbias,
                             const float* dout, const float* inp, const float* weight,
                             const int64_t* offsets, int64_t groups, int64_t IC, int64_t OC) {
  if (const DeviceBackend* b = s.backend()) {
    const std::vector<int64_t> o = host_offsets(*b, offsets, groups);
    for (int64_t g = 0; g < groups; ++g)
      if (const int64_t rows = o[g + 1] - o[g]; rows > 0)
        b->linear_backward(at(dinp, o[g] * IC), at(dweight, g * OC * IC), at(dbias, g * OC),
                           dout + o[g] * OC, at(inp, o[g] * IC), weight + g * OC * IC, rows, IC,
                           OC);
    return;
  }
  require_cpu_kernels(s, "grouped_linear_backward");
  cpu::grouped_linear_backward(s.operand(dinp), s.operand(dweight), s.operand(dbias),
                               s.operand(dout), s.operand(inp), s.operand(weight),
                               s.operand(offsets), groups, IC, OC);
}

void grouped_linear_forward_lowp(const Stream& s, const LowpGemm& gemm, Allocator& scratch,
                                 float* out, const uint16_t* inp, const uint16_t* weight,
                                 const float* bias, const int64_t* offsets, int64_t groups,
                                 int64_t IC, int64_t OC) {
  if (const DeviceBackend* b = s.backend()) {
    const std::vector<int64_t> o = host_offsets(*b, offsets, groups);
    for (int64_t g = 0; g < groups; ++g) {
      const int64_t rows = o[g + 1] - o[g];
      if (rows <= 0) continue;
      float* y = out + o[g] * OC;
      b->lowp_gemm(gemm.type(), false, true, rows, OC, IC, inp + o[g] * IC, IC,
                   weight + g * OC * IC, IC, 0.0F, y, OC);
      if (bias != nullptr) b->add_bias_rows(y, bias + g * OC, rows, OC);
    }
    return;
  }
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
  if (const DeviceBackend* b = s.backend()) {
    const std::vector<int64_t> o = host_offsets(*b, offsets, groups);
    for (int64_t g = 0; g < groups; ++g) {
      const int64_t rows = o[g + 1] - o[g];
      if (rows <= 0) continue;
      const uint16_t* dy = dout + o[g] * OC;
      const uint16_t* w = weight + g * OC * IC;
      if (dinp != nullptr)
        b->lowp_gemm(gemm.type(), false, false, rows, IC, OC, dy, OC, w, IC, 1.0F,
                     dinp + o[g] * IC, IC);
      if (dweight != nullptr)
        b->lowp_gemm(gemm.type(), true, false, OC, IC, rows, dy, OC, inp + o[g] * IC, IC, 1.0F,
                     dweight + g * OC * IC, IC);
      if (dbias != nullptr)  // the f32 kernel's row sum of the f32 gradient
        b->linear_backward(nullptr, nullptr, dbias + g * OC, dout_f32 + o[g] * OC, nullptr,
                           nullptr, rows, IC, OC);
    }
    return;
  }
  require_cpu_kernels(s, "grouped_linear_backward_lowp");
  KernelScratch ks(s, scratch);
  cpu::grouped_linear_backward_lowp(
      gemm, ks.get(), s.operand(dinp), s.operand(dweight), s.operand(dbias), s.operand(dout),
      s.operand(dout_f32), s.operand(inp), s.operand(weight), s.operand(offsets), groups, IC, OC);
}

}  // namespace parallm::ops
