#include "ops/nf4.h"

#include "kernels/cpu/nf4_gemm.h"

namespace parallm::ops {

namespace {

void require_host(const Stream& s, const char* op) {
  PX_CHECK(s.device() == Device::CPU, "op {} runs on the cpu stream only so far, not on {}", op,
           device_name(s.device()));
}

}  // namespace

void nf4_linear_forward(const Stream& s, Allocator& a, float* out, const float* inp,
                        const Nf4Weight& w, const float* bias, int64_t M,
                        std::optional<LowpType> round) {
  require_host(s, "nf4_linear_forward");
  cpu::nf4_linear_forward(a, out, inp, w, bias, M, round);
}

void nf4_linear_backward_input(const Stream& s, Allocator& a, float* dinp, const float* dout,
                               const Nf4Weight& w, int64_t M, std::optional<LowpType> round) {
  require_host(s, "nf4_linear_backward_input");
  cpu::nf4_linear_backward_input(a, dinp, dout, w, M, round);
}

}  // namespace parallm::ops
