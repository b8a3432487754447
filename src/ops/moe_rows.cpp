#include "ops/moe_rows.h"

#include "ops/device_backend.h"

namespace parallm::ops {

namespace {

AssignedRows on_host(const Stream& s, const AssignedRows& r) {
  AssignedRows h = r;
  h.fed = s.operand(r.fed);
  h.send_row = s.operand(r.send_row);
  return h;
}

}  // namespace

void moe_gather(const Stream& s, float* send, const float* x, const AssignedRows& r, int64_t C) {
  if (const DeviceBackend* b = s.backend()) return b->moe_gather(send, x, r, C);
  require_cpu_kernels(s, "moe_gather");
  cpu::moe_gather(s.operand(send), s.operand(x), on_host(s, r), C);
}

void moe_combine(const Stream& s, float* out, const float* y, const float* gate,
                 const AssignedRows& r, int64_t C) {
  if (const DeviceBackend* b = s.backend()) return b->moe_combine(out, y, gate, r, C);
  require_cpu_kernels(s, "moe_combine");
  cpu::moe_combine(s.operand(out), s.operand(y), s.operand(gate), on_host(s, r), C);
}

void moe_combine_backward(const Stream& s, float* dy, float* dgate, const float* dout,
                          const float* y, const float* gate, const AssignedRows& r, int64_t C) {
  if (const DeviceBackend* b = s.backend()) return b->moe_combine_backward(dy, dgate, dout, y, gate, r, C);
  require_cpu_kernels(s, "moe_combine_backward");
  cpu::moe_combine_backward(s.operand(dy), s.operand(dgate), s.operand(dout), s.operand(y),
                            s.operand(gate), on_host(s, r), C);
}

void moe_gather_backward(const Stream& s, float* dx, const float* dsend, const AssignedRows& r,
                         int64_t C) {
  if (const DeviceBackend* b = s.backend()) return b->moe_gather_backward(dx, dsend, r, C);
  require_cpu_kernels(s, "moe_gather_backward");
  cpu::moe_gather_backward(s.operand(dx), s.operand(dsend), on_host(s, r), C);
}

}  // namespace parallm::ops
